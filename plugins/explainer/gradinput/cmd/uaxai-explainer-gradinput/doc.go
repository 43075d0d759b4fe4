// Command uaxai-explainer-gradinput serves the explainer.gradinput plugin.
// Put it in a uaxai plugin directory (--plugins, $UAXAI_PLUGIN_PATH, or
// beside the uaxai executable); uaxai starts it on demand.
package main
