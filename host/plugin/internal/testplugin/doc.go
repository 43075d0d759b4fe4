// Command testplugin is the plugin binary the host/plugin tests build as
// uaxai-explainer-echo: it serves echo.Explainer as explainer.echo.
package main
