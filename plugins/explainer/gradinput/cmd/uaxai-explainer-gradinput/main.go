package main

import (
	"github.com/uaxai/uaxai/plugins/explainer/gradinput"
	"github.com/uaxai/uaxai/sdk"
)

func main() { sdk.Serve(gradinput.New()) }
