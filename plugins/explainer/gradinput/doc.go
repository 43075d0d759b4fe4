// Package gradinput is the attribution operator "explainer.gradinput",
// gradient x input (Captum's InputXGradient) on the class probability:
//
//	map[t] = x[t] * d p_c(x) / d x[t]
//
// where c is the input's target class. With times_input = false it is the
// plain gradient (saliency without absolute value). Maps stay signed.
//
// With C input channels of T samples (the map channel-major, as the
// input) it is the same formula per element, each channel's own:
//
//	map[ch*T+t] = x[ch*T+t] * d p_c(x) / d x[ch*T+t]
//
// as Captum's InputXGradient (Saliency with abs=False for the gradient)
// on a (1, C, T) input.
//
// It is the example third-party plugin: it imports only the sdk, and its
// binary (cmd/uaxai-explainer-gradinput) is one line,
// sdk.Serve(gradinput.New()). Build it into a plugin directory:
//
//	go build -o ~/.uaxai/plugins/ ./plugins/explainer/gradinput/cmd/uaxai-explainer-gradinput
package gradinput
