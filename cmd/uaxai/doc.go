// Command uaxai computes and evaluates explanation distributions of a 1-D
// CNN power-quality classifier: run a recipe, generate data, train, predict,
// and serve the built-in plugins.
//
// Flags, validation of flag combinations, printing; nothing else. One
// table of commands (main.go: name, argument forms, summary, function) is
// the dispatch, uaxai help's overview and every command's -h usage;
// view.go: uaxai view RUN_DIR (xdg-open of report.html, or --serve: the
// run directory on 127.0.0.1, by host/serve).
package main
