// Command testplugin is the plugin binary the host/plugin tests build as
// uaxai-explainer-echo: it serves echo.Explainer as explainer.echo.
package main

import (
	"github.com/uaxai/uaxai/host/plugin/internal/testplugin/echo"
	"github.com/uaxai/uaxai/sdk"
)

func main() { sdk.Serve(echo.New("explainer.echo")) }
