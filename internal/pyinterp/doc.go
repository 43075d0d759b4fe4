// Package pyinterp chooses the interpreter of a Python plugin: the first
// of a list of candidates (an interpreter the plugin names,
// $UAXAI_PYTHON, its #! line's, python3 on PATH, Debian's
// /usr/bin/python3) that imports numpy, grpc and google.protobuf, the
// modules of the kit in sdk/python, and the modules the plugin itself
// requires (a "# uaxai-requires: torch" line in its head, Requires).
// Each interpreter is probed once a process for each set of modules,
// concurrent askers sharing one probe, in a process group of its own
// that is killed past a timeout. The host's plugin manager
// (host/plugin) and the conformance kit (sdk/sdktest) both use it, so a
// plugin runs under the same interpreter in both.
//
// The interpreter of a Python plugin, for the host (host/plugin) and the
// conformance kit (sdk/sdktest) alike: Candidates ($UAXAI_PYTHON, the #!
// line's interpreter, python3 on PATH, /usr/bin/python3; the host puts the
// manifest's python first), Choose (the first that imports numpy, grpc and
// google.protobuf, and the modules the plugin's head requires, Requires:
// "# uaxai-requires: torch" lines within its first 256 bytes, names
// checked by DottedName/Identifier, which host/recipe uses for [model]
// torch too; none: NoInterpreterError, naming the plugin and every
// interpreter tried with the modules it lacks, the apt command and
// UAXAI_PYTHON), Probe (once a process, concurrent askers sharing one
// probe, in a process group of its own, internal/procgroup, killed past 30
// s), the #! line (Shebang, NamesPython, Script); SetDefaults and
// SetProbeTimeout are for tests.
package pyinterp
