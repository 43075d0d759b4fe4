// Package torch holds posterior.torch, the executable Python plugin
// uaxai-posterior-torch beside this file (the user's own PyTorch networks
// as a posterior, served by the Python kit's model server), embedded so
// that a uaxai binary can unpack it where it runs without the repository
// (host/torchserver.FindPythonKit).
package torch

import _ "embed"

// Script is the executable uaxai-posterior-torch.
//
//go:embed uaxai-posterior-torch
var Script []byte

// ScriptName is its file name.
const ScriptName = "uaxai-posterior-torch"
