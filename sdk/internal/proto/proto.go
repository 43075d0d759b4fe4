package proto

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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

// InProcess serves p inside this process over go-plugin's gRPC transport,
// with the configuration sdk.Serve uses (ServeConfig), and connects a
// client that dispenses from plugins. It returns the client's protocol and
// a function that stops client and server; sdktest and the driver's tests
// use it.
func InProcess(p any, plugins goplugin.PluginSet, dial []grpc.DialOption, log hclog.Logger) (goplugin.ClientProtocol, func(), error) {
	cfg, err := ServeConfig(p)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = log
	ctx, cancel := context.WithCancel(context.Background())
	rc := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: rc, CloseCh: closed}
	go goplugin.Serve(cfg)
	var r *goplugin.ReattachConfig
	select {
	case r = <-rc:
	case <-time.After(30 * time.Second):
		cancel()
		return nil, nil, errors.New("the plugin server did not start in 30 s")
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          plugins,
		Reattach:         r,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  dial,
		Logger:           log,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		cancel()
		return nil, nil, fmt.Errorf("connecting to the plugin server: %w", err)
	}
	stop := func() {
		// Close asks the server to stop; cancelling as well would stop it
		// twice at once (a data race inside go-plugin), so cancel only if
		// it does not stop by itself.
		_ = rpc.Close()
		client.Kill()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			cancel()
			<-closed
		}
		cancel()
	}
	return rpc, stop, nil
}
