// Package script runs summaries written as Go scripts: a researcher scripts
// a custom UA-RAO summary without recompiling uaxai. Scripts are
// interpreted by yaegi (github.com/traefik/yaegi) in a sandbox that offers
// only an allow-list of packages.
//
// # The script contract
//
// A script is one Go file. The recipe names it with
//
//	[[summary]]
//	script = "scripts/trimmed_mean.go"   # relative to the recipe's directory
//	trim = 0.2                            # every other key is the script's config
//
// and the file looks like this (recipes/scripts/trimmed_mean.go is a
// complete example):
//
//	//go:build ignore                     // keeps the go tool from building it
//
//	package trimmed                       // any package name but main
//
//	import ("math"; "sort")               // only the allow-listed packages
//
//	const ID = "summary.trimmed_mean"     // optional; default "summary.script-<file base name>";
//	                                      // the "summary." prefix is added if missing
//	const Version = "0.1.0"               // optional; default "0.0.0"
//	const Output = "map"                  // optional; "map" (default), "set" or "band"
//
//	// Check validates the recipe table (optional; without it the script
//	// accepts no config keys). Report bad keys as sdk.Config does:
//	// `unknown key "x" (accepted: trim)`, `key "trim": ...`, so the host can
//	// give the recipe line.
//	func Check(cfg map[string]interface{}) error
//
//	// Output "map" or "set": Summarise gets a batch of inputs, draws[i][s][n]
//	// for input i, draw s, coordinate n, and returns one []float64 of length
//	// N_i per input. A set returns 0 (out) or 1 (in) for each coordinate.
//	func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error)
//
//	// Output "band": SummariseBand returns the lower and the upper map of
//	// every input, lower[i][n] <= upper[i][n].
//	func SummariseBand(draws [][][]float64, cfg map[string]interface{}) (lower, upper [][]float64, err error)
//
// (map[string]any is the same type as map[string]interface{}.) A package
// doc comment, if any, becomes the summary's description.
//
// The host calls Summarise (or SummariseBand) once per batch of inputs,
// never per input or per draw: yaegi runs tight loops about 100 times
// slower than compiled Go, so a script should do its per-coordinate work in
// plain loops over the batch and leave sorting to sort.Float64s (which runs
// compiled). The script gets its own copy of the draws and of the config,
// and may modify them. The host checks every result: one result per input,
// length N_i, finite values, 0/1 for a set, lower <= upper for a band; an
// error names the script, the input index and what was expected.
//
// Imports allowed: errors, fmt, math, sort, strconv, strings, and
// github.com/uaxai/uaxai/sdk (its Config type with the accessors Only,
// Float, Int, String, Bool, IntRange, and the OutputKind constants, e.g.
// sdk.Config(cfg).Float("trim", 0.1)). Any other import (os, os/exec, net,
// unsafe, syscall, io/ioutil, reflect, runtime, ...) makes Load fail with
// an error naming the script, the line, the package and the accepted list.
// go statements are refused as well: a panic in a goroutine could not be
// recovered. fmt.Print* output goes to the host's stderr (WithOutput).
//
// # Where scripts run
//
// This package interprets a script in the process that calls Load. The
// host never does that itself: host/plugin's Manager.Script runs every
// script in a child process (`uaxai plugin serve --script PATH`, see
// plugin.ServeScript), like any other plugin, with a memory limit and a
// smaller stack, and bounds every call with the recipe's [limits]. A
// script that recurses without end, allocates without end or loops for
// ever can kill or hang only that child: Go's stack overflow and out of
// memory are fatal errors that no recover catches, and yaegi cannot stop
// a loop that never calls back into the host.
//
// Things that differ from compiled Go, for script authors:
//   - Loop variables have pre-Go-1.22 semantics in yaegi: a closure that
//     captures a for-loop variable sees its last value. Copy it first
//     (v := v) if a closure keeps it.
//   - Generics from the standard library (slices, maps) are not offered.
//   - With named results, a return that permutes them is wrong in yaegi:
//     in func f() (lo, hi []float64), "return hi, lo" returns hi twice.
//     Return fresh variables, or assign the named results and return.
//   - A switch on an interface{} value with constant cases
//     (switch cfg["mode"] { case "a": ... }) panics in yaegi: type-assert
//     first (mode, _ := cfg["mode"].(string)).
//   - A panic in the script (index out of range, nil map) is recovered and
//     returned as an error naming the script, the function, the panic value
//     and the line where the panicking function's body starts (yaegi does
//     not report the line of the panicking statement itself).
//   - Global variables persist between calls of one interpreter; with
//     WithInstances(n > 1) each of the n interpreters has its own.
//
// Cancelling the context of Summarise ends the call at once, also inside
// the script: the interpreter that ran it is then discarded and a fresh
// one loaded for the next call. (yaegi abandons a goroutine that does not
// return, a loop without end goes on burning a CPU: a script process
// whose call has missed its deadline is killed by the host.)
//
// Yaegi summary scripts, interpreted in a script process: sandbox.go
// (allow-listed packages), load.go (parse, vet, info), call.go (one call a
// batch, panics recovered).
package script
