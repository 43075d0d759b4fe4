package slurm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Script is one sbatch script: #SBATCH directives, then `set -euo
// pipefail` and shell lines.
type Script struct {
	Name     string   // --job-name (%x in Output)
	Array    []int    // --array; nil: not an array job
	Output   string   // --output, a path pattern ("%x-%A_%a.out"); also stderr
	Options  []string // further directives, each one option: "--time=1:00:00"
	Comments []string // lines written as "# ..." after the directives
	Lines    []string // shell lines, quoted by the caller (Quote)
}

// Bytes renders the script. A directive's value is written in double
// quotes when it holds white space (sbatch reads #SBATCH lines with its
// own parser, which takes quotes off); a value with a double quote or a
// newline cannot be written and is an error.
func (s Script) Bytes() ([]byte, error) {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	dir := func(opt string) error {
		name, val, hasVal := strings.Cut(opt, "=")
		if strings.ContainsAny(opt, "\"\n\r") {
			return fmt.Errorf("sbatch script %s: option %q holds a double quote or a line break, which an #SBATCH line cannot carry", s.Name, opt)
		}
		if hasVal && strings.ContainsAny(val, " \t") {
			opt = name + `="` + val + `"`
		}
		b.WriteString("#SBATCH " + opt + "\n")
		return nil
	}
	opts := []string{"--job-name=" + s.Name}
	if s.Array != nil {
		opts = append(opts, "--array="+FormatArray(s.Array))
	}
	opts = append(opts, "--output="+s.Output)
	opts = append(opts, s.Options...)
	for _, o := range opts {
		if err := dir(o); err != nil {
			return nil, err
		}
	}
	for _, c := range s.Comments {
		b.WriteString("# " + c + "\n")
	}
	b.WriteString("set -euo pipefail\n")
	for _, l := range s.Lines {
		b.WriteString(l + "\n")
	}
	return []byte(b.String()), nil
}

// Write writes the script to path atomically, executable (0755).
func (s Script) Write(path string) error {
	b, err := s.Bytes()
	if err != nil {
		return err
	}
	return writeExecutable(path, func(w *bufio.Writer) error { _, err := w.Write(b); return err })
}

// writeExecutable writes path atomically with mode 0755: a temporary file
// beside it, synced and made executable, then renamed into place.
func writeExecutable(path string, write func(w *bufio.Writer) error) error {
	dir, name := filepath.Split(path)
	tmp, err := atomicfile.Temp(dir, name, write)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	atomicfile.SyncDir(dir)
	return nil
}

// Quote quotes a word for the shell: as it is when it holds only
// characters the shell leaves alone, else in single quotes (a quote
// inside becomes '\”).
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellLine writes a command line for a shell: each word quoted.
func ShellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
