package script

import (
	"fmt"
	"slices"
	"strings"
)

// Inspect checks the summary script at path as Load does before it
// interprets anything, and runs none of it: it reads the file and parses
// it with go/parser (a syntax error names its line), and refuses package
// main, an import outside the allow-list, a go statement, and a script
// that declares neither Summarise nor SummariseBand. What only running
// the script tells (its constants' values, its functions' types, its
// Check of the recipe's table) is left to Load: yaegi runs a script's
// package initialisation (top-level var initialisers, init functions)
// as it loads it, so nothing here goes near the interpreter.
func Inspect(path string) error {
	src, err := ReadSource(path)
	if err != nil {
		return err
	}
	s := &Script{path: path, source: src}
	d, err := s.inspect()
	if err != nil {
		return err
	}
	want := []string{"Summarise", "SummariseBand"}
	if !slices.ContainsFunc(want, func(name string) bool { return d[name] == "func" }) {
		return &Error{Script: path, Msg: fmt.Sprintf("declares no function %s (accepted: %s, or %s with const Output = \"band\")",
			strings.Join(want, " nor "), sigSummarise, sigBand)}
	}
	return nil
}
