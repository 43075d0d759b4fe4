package sdk

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/proto"
	"github.com/uaxai/uaxai/sdk/nn"
)

func init() {
	proto.ServeConfig = func(p any) (*goplugin.ServeConfig, error) {
		pl, ok := p.(Plugin)
		if !ok {
			return nil, fmt.Errorf("%T is not a plugin: it has no Info() sdk.Info method", p)
		}
		return serveConfig(pl)
	}
}

// Serve serves p, a Posterior, Explainer or Summary, as a plugin process
// and returns when the host closes it. It is all a plugin's main does:
//
//	func main() { sdk.Serve(myexplainer.New()) }
//
// Run by hand (without the host's magic cookie in the environment) it
// prints a note and exits with status 1; so does a value that Describe
// rejects (an ID not namespaced by its kind, Info fields of another kind).
// Serve owns stdout: print nothing to it, before or during Serve; log to
// stderr (the host shows a plugin's stderr in its log).
func Serve(p Plugin) {
	cfg, err := serveConfig(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "uaxai plugin: %v\n", err)
		os.Exit(1)
	}
	goplugin.Serve(cfg)
}

// serveConfig is the go-plugin configuration Serve uses for p: the
// handshake, the gRPC protocol only, gRPC servers that accept messages up
// to proto.MaxMessageSize, and JSON logs on stderr (which the host's
// go-plugin client re-levels into its own log).
func serveConfig(p Plugin) (*goplugin.ServeConfig, error) {
	kind, info, err := Describe(p)
	if err != nil {
		return nil, err
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:       info.ID,
		Level:      hclog.Debug,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	return &goplugin.ServeConfig{
		HandshakeConfig: proto.Handshake(),
		Plugins: goplugin.PluginSet{
			string(kind): &servedPlugin{kind: kind, impl: p, info: info, log: log},
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(proto.MaxMessageSize), grpc.MaxSendMsgSize(proto.MaxMessageSize))
			return grpc.NewServer(opts...)
		},
		Logger: log,
	}, nil
}

// servedPlugin is the go-plugin glue of the plugin side: it registers the
// kind's service around the plugin. The host side is package sdk/driver.
type servedPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	kind Kind
	impl Plugin
	info Info
	log  hclog.Logger
}

// GRPCServer registers the kind's service.
func (p *servedPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	switch p.kind {
	case KindPosterior:
		pb.RegisterPosteriorServer(s, &posteriorServer{impl: p.impl.(Posterior), info: p.info, log: p.log})
	case KindExplainer:
		pb.RegisterExplainerServer(s, &explainerServer{impl: p.impl.(Explainer), info: p.info, log: p.log, models: map[uint64]nn.Model{}})
	case KindSummary:
		pb.RegisterSummaryServer(s, &summaryServer{impl: p.impl.(Summary), info: p.info, log: p.log})
	default:
		return fmt.Errorf("unknown plugin kind %q", p.kind)
	}
	return nil
}

// GRPCClient is the host's side, which a plugin never plays.
func (p *servedPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("sdk serves plugins; the host side is sdk/driver")
}
