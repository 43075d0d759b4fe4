// Package procgroup starts a child process in a process group of its own
// and kills the whole group: what the plugin manager does with every
// plugin (host/plugin) and the interpreter choice with every probe
// (internal/pyinterp), so that a child that started children of its own
// (a shell script's interpreter, a plugin's workers) leaves nothing
// behind.
//
// A child in a process group of its own (Own: Setpgid, and Pdeathsig so
// that the kernel kills it with its parent) and SIGKILL to the whole group
// (Kill); outside Linux the child alone. The plugin manager's plugins and
// the interpreter probes use it.
//
// Outside Linux it kills the child only.
package procgroup
