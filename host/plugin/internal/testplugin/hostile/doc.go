// Command hostile is a plugin that misbehaves on purpose, for the host's
// hostile-plugin tests. Installed as uaxai-<kind>-<mode>_<call> it serves
// the plugin <kind>.<mode>_<call>: it behaves (as a trivial posterior,
// explainer or summary) until the call named <call>, and then does what
// <mode> says.
//
// Calls: start (before it serves: the handshake), check, fit, sample,
// explain, summarise.
//
// Modes, in any call:
//
//	hang   never answer (cancellation is ignored)
//	crash  panic on a goroutine: the process dies
//	spawn  start a grandchild (sh, then sleep) that holds the plugin's
//	       stdout and stderr, and hang
//	oom    limit its own memory (RLIMIT_DATA 256 MiB) and allocate until
//	       the Go runtime dies of it
//	shape  answer with the wrong number of values
//	nan    answer with a NaN value
//	inf    answer with +Inf
//	liar   say its version is a line that erases the terminal's line
//	       and prints "uaxai: all good" (liarText); in the call, write
//	       that to its stderr (raw, as a go-plugin log entry, and after
//	       Serve through go-plugin's forwarding) and fail with it
//	hog    allocate and touch up to 1 GiB, then hang: a plugin that
//	       the host's limits.plugin_memory must stop
//
// and at start only:
//
//	garbage  print garbage to stdout instead of the handshake, and wait
//	silent   print nothing and wait
//	orphan   start a grandchild that holds stdout, and exit
//	escape   as orphan, but the grandchild leaves the process group
//	         (setsid): the host cannot kill it, but must not wait for it
//
// When the directory of the executable has a directory "pids", the
// plugin and each grandchild write their pid as a file there, so that a
// test can tell whether one is left behind.
package main
