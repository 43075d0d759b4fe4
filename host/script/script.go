package script

import (
	"bytes"
	"fmt"

	"github.com/traefik/yaegi/interp"

	"github.com/uaxai/uaxai/sdk"
)

// Script is a loaded summary script; it implements sdk.Summary and is safe
// for concurrent use.
type Script struct {
	path   string // as given to Load, for messages
	source []byte
	digest string
	pkg    string // package name
	info   sdk.Info
	fn     string // the result function: "Summarise" or "SummariseBand"
	check  bool   // the script defines Check
	opts   options

	idle  chan *instance // interpreters not in use
	slots chan struct{}  // one token per live interpreter
}

var _ sdk.Summary = (*Script)(nil)

// instance is one interpreter holding the script.
type instance struct {
	in        *interp.Interpreter
	io        *hostIO
	stderr    *bytes.Buffer
	summarise *interp.Program
	check     *interp.Program
}

// Info describes the script: ID, Version and Output from its constants.
func (s *Script) Info() sdk.Info { return s.info }

// Path is the script's file as given to Load.
func (s *Script) Path() string { return s.path }

// Digest is the SHA-256 (hex) of the script's source, for manifests and
// caches (the recipe's hash covers only the script's path).
func (s *Script) Digest() string { return s.digest }

// Error is an error in a script, at a line when Line > 0.
type Error struct {
	Script    string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("script %s: line %d, column %d: %s", e.Script, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("script %s: %s", e.Script, e.Msg)
}
