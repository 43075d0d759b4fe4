// Package plugin is the host side of uaxai's plugins: a Registry of the
// built-in plugins compiled into the uaxai binary, and a Manager that
// starts plugins out of process over hashicorp/go-plugin (gRPC) and hands
// them to the host as ordinary sdk.Posterior, sdk.Explainer and
// sdk.Summary values.
//
// Built-ins are served by re-executing the uaxai binary as
// `uaxai plugin serve <id>` (whose command runs ServeBuiltin), so they
// prove the same protocol as third-party plugins. Third-party plugins are
// executables named uaxai-<kind>-<name> (e.g. uaxai-explainer-gradinput)
// in the plugin directories (see DefaultDirs); they serve the plugin
// <kind>.<name>.
//
// Summary scripts are served the same way, by `uaxai plugin serve
// --script PATH` (Manager.Script, ServeScript): the host never runs a
// script itself.
//
// Every plugin is started once and reused, in a process group of its
// own; Close kills them all, each with its group. The command line
// arranges for every group to be killed at the first SIGINT or SIGTERM
// too (see Manager.KillOnSignal). Starting a plugin and each call to it
// have a deadline (host/limits, the recipe's [limits]); a plugin that misses
// one is killed. A plugin process that dies, or is killed, makes an error
// that names the plugin, its binary (or script) and its pid, and the
// call.
//
// The plugin manager: a Registry value of built-ins, discovery of
// uaxai-<kind>-<name> binaries and of uaxai-<kind>-<name>/ directories
// with a plugin.toml (manifest.go: command, language, python; a plugin's
// language for uaxai plugins), the interpreter of a Python plugin
// (python.go: a plugin whose manifest says language = "python" or names a
// python, or whose #! line names python, runs as <interpreter> <script>
// with the manifest's python put before internal/pyinterp's candidates and
// chosen by pyinterp.Choose; its error also names plugin.toml; a passed-
// over interpreter the plugin or the user named is logged as a warning),
// process start (re-exec uaxai plugin serve ID for built-ins, uaxai plugin
// serve --script PATH for scripts) in process groups of their own
// (group.go, go-plugin's runner), the deadlines of [limits] (limits.go: a
// call's limit and its key; proc.go), crash detection, kill on close, on
// signals and on deadlines; the child side of a script process
// (ServeScript).
//
// # The trust boundary
//
// The host process runs only uaxai's own code: the recipe, the data, the
// engine, scoring and reports. Every plugin runs in a child process: a
// built-in as uaxai plugin serve ID, a binary as itself, a summary script
// as uaxai plugin serve --script PATH (yaegi runs it there; the host never
// interprets a script). What a plugin sends back is checked before the
// host uses it (sdk/driver: counts, lengths, finite values, lower <=
// upper). A plugin can therefore fail a run, and name itself in the error,
// but neither crash the host nor hang it:
//
//   - Process groups. Each plugin starts in a process group of its own
//     (Setpgid; host/plugin/group.go is the go-plugin runner that starts
//     it). When the plugin exits, or the host kills it, the whole group
//     gets SIGKILL before the plugin is reaped (waitid(WNOWAIT) keeps the
//     group's ID from being reused), so its grandchildren die with it. The
//     host closes its ends of the plugin's stdout and stderr 0.5 s after
//     that, so a process that still holds them cannot block go-plugin,
//     which waits for them before it reaps the plugin and before
//     Client.Kill returns. A terminal's Ctrl-C reaches the host only; the
//     host kills the groups.
//   - Deadlines ([limits] of the recipe, limits.Limits): the handshake
//     (start until the plugin has answered Info; a watchdog kills the
//     group, which go-plugin's lock, held through the handshake, cannot
//     delay), and each call: Check, Fit, Sample, Load and Release, Explain
//     (a batch under one draw), Summarise (a batch). Past its limit a
//     call's plugin is killed, group and all; the error names the plugin
//     (ID, source, pid), the call and the key, e.g. explainer.x (path, pid
//     7): Explain: no answer within 10m (limits.explain_batch); killed its
//     process group, and the engine adds the batch (on split test-0
//     records 32..63, draw 4). The next request starts the plugin again. A
//     posterior that serves its draws is bounded the same way in each
//     request the host makes to them (limits.model_call, see "The model
//     service").
//   - Signals. The commands that start plugins call Manager.KillOnSignal:
//     the first SIGINT or SIGTERM cancels the run's context and kills
//     every group at once (Manager.Stop), also while a plugin starts; the
//     handler is then released, so a second signal ends the host at once.
//     Plugins also die with the host by Pdeathsig.
//   - Scripts. A script's process limits its data segment to
//     limits.script_memory (RLIMIT_DATA; the Go runtime's soft limit is
//     7/8 of it) and its goroutine stacks to an eighth of that (at most
//     256 MiB), before yaegi starts. A stack overflow or running out of
//     memory is a fatal Go error that no recover catches: it ends that
//     process, and the failing call says so by the script's ID and path
//     (summary.script-x (script /p/x.go, pid 9) died during Summarise:
//     fatal error: stack overflow (the script recursed too deep ...)). The
//     run then fails cleanly: the run directory is kept and its manifest
//     says failed. A script that does not load reports its own error (with
//     the line) through its process's stderr. The import allow-list is the
//     script's only sandbox for what it may call.
//   - Plugin memory. Every other plugin process (a built-in re-executed, a
//     plugin binary, a Python plugin) runs under limits.plugin_memory
//     (default "auto": half the least of the machine's memory and the
//     host's cgroups' limits, at least 256 MiB), set by the host as it
//     starts it (group.startLimited): in a cgroup v2 of its own under the
//     host's (memory.max, the process started in it by CLONE_INTO_CGROUP,
//     removed with cgroup.kill once reaped) when the memory controller is
//     delegated to the host's cgroup, else by prlimit(RLIMIT_DATA) on the
//     child just after it starts (not on a race-detector build). The debug
//     line plugin started says which (memory=512MiB by RLIMIT_DATA (cgroup
//     v2: ...why not)). A plugin that dies is described by how it ended
//     (proc.exitCause): died during Explain: out of memory (limit 512MiB,
//     limits.plugin_memory) for a Go runtime that failed to map memory, or
//     whose cgroup's memory.events counts an OOM kill; killed by SIGKILL,
//     likely out of memory (...) for a SIGKILL the host did not send;
//     killed by SIGTERM and the like for other signals.
//   - Plugin text. Whatever a plugin writes that reaches the terminal (its
//     log entries and stderr lines, its errors, its version and summary,
//     what go-plugin quotes of its output) passes
//     internal/termsafe.Escape: ESC, CR, newlines within one message, the
//     other C0 and C1 controls, bidi overrides and invalid UTF-8 are
//     written as Go escapes, so each plugin line is one line of the host's
//     log and cannot forge one of the host's or move the cursor.
//   - Socket paths. go-plugin puts a plugin's socket in a directory it
//     makes under $TMPDIR; a path longer than a unix socket's 107 bytes
//     cannot be bound. The Manager checks the length before it starts a
//     plugin and says TMPDIR ... is N bytes; unix socket paths must fit in
//     107 bytes: set TMPDIR to a shorter directory, not blaming the
//     plugin.
//
// What the boundary does not cover: a grandchild that leaves its group
// (setsid) survives the plugin (the host no longer waits for it); when the
// host itself is killed by SIGKILL, Pdeathsig kills the plugin but not its
// grandchildren (nor, without a cgroup, those that left the group);
// between a plugin's start and its prlimit (without a cgroup) it runs for
// a moment unlimited; outside Linux no plugin gets a memory limit; a
// plugin binary runs with the user's rights (no file system or network
// sandbox). Options.InProcess (tests only) runs built-ins in the host,
// without deadlines.
//
// # Tests
//
//   - host/plugin/hostile_test.go, script_test.go: the hostile-plugin
//     suite. A test plugin (internal/testplugin/hostile, its behaviour
//     named by its file name) hangs, crashes, spawns grandchildren,
//     exhausts its memory, prints garbage or nothing, or answers with
//     wrong shapes, NaN or Inf, in each call; scripts loop, recurse and
//     allocate without end. Each case asserts a bounded end, an error
//     naming the plugin and the call, and no process left (by pid, process
//     group and command line in /proc). cmd/uaxai/hostile_test.go does the
//     same through the binary (the first SIGINT; uaxai plugins).
//   - Tests on a loaded machine (two cores at load average 7 and more): a
//     limit or deadline in a test decides only what the test is about. In
//     host/plugin, hostileLimits(keys...) makes every limit patient
//     (minutes) but the ones a test names, short (2 s a call, 3 s the
//     handshake), met by a plugin that never answers, so that they expire
//     for sure; a crash, a bad answer or the memory limit is tested under
//     patient limits only. Waits for an event (a process gone, a line
//     forwarded) poll up to a minute and end as soon as it happens; no
//     test asserts how long something took beyond "not before its timeout"
//     and "before the hanging process's own sleep ends". What is slow to
//     make is made once a test binary: cmd/uaxai builds the command once
//     and starts one PyTorch model server a network of
//     testdata/golden/archs (torchServer, closed in its TestMain) for all
//     the explain and predict calls on it; internal/pythontest asks Python
//     once whether it imports a list of modules. The four host/runner
//     tests that reproduce a whole quick recipe (paper, three-phase,
//     training accuracy, ResNet1D: about 160 s on two idle cores) skip
//     unless built with -tags heavy (skipUnlessHeavy); .ci/run runs them
//     in a step of their own after go test ./....
package plugin
