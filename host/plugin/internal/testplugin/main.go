package main

import (
	"github.com/uaxai/uaxai/host/plugin/internal/testplugin/echo"
	"github.com/uaxai/uaxai/sdk"
)

func main() { sdk.Serve(echo.New("explainer.echo")) }
