package python

import "embed"

// Kit is the Python kit's package uaxai_plugin as this repository holds
// it (its .py files): what a uaxai binary unpacks and runs where it finds
// no sdk/python of a repository (host/torchserver.FindPythonKit).
//
//go:embed uaxai_plugin/*.py uaxai_plugin/_pb/*.py
var Kit embed.FS
