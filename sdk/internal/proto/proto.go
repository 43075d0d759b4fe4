// Package proto holds what the two sides of the uaxai plugin protocol
// share besides the generated code: the go-plugin handshake, the message
// size limit, and the hook through which sdktest serves a plugin inside a
// test process.
package proto

import (
	goplugin "github.com/hashicorp/go-plugin"
)

// The go-plugin handshake. Version changes whenever the wire protocol
// (sdk/internal/pb, package uaxai.vN) changes in a way an older peer would
// misread; a host and a plugin of different versions refuse each other
// with a clear go-plugin error.
const (
	Version          = 2
	MagicCookieKey   = "UAXAI_PLUGIN"
	MagicCookieValue = "uaxai-plugin-7f3c9a51e2d84b06"
)

// MaxMessageSize is the largest gRPC message either side sends or
// accepts (the default is 4 MB; a training set is tens of MB).
const MaxMessageSize = 1 << 30

// Handshake is the go-plugin handshake that hosts and plugins share.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  Version,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// ServeConfig is set by package sdk when it initialises: the go-plugin
// configuration sdk.Serve uses for a plugin value. sdktest sets its Test
// field to serve the plugin inside the test process.
var ServeConfig func(plugin any) (*goplugin.ServeConfig, error)
