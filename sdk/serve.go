package sdk

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/uaxai/uaxai/sdk/internal/pb"
)

// The go-plugin handshake of the uaxai protocol. ProtocolVersion changes
// whenever the wire protocol (sdk/internal/pb, package uaxai.v1) changes
// in a way an older peer would misread; a host and a plugin of different
// versions refuse each other with a clear go-plugin error.
const (
	ProtocolVersion  = 1
	MagicCookieKey   = "UAXAI_PLUGIN"
	MagicCookieValue = "uaxai-plugin-7f3c9a51e2d84b06"
)

// MaxMessageSize is the largest gRPC message either side sends or
// accepts (the default is 4 MB; a training set is tens of MB).
const MaxMessageSize = 1 << 30

// infoTimeout bounds the Info call a client makes when it connects, and
// every Check call (which has no context of its own).
const infoTimeout = time.Minute

// Handshake is the go-plugin handshake that hosts and plugins share.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// Serve serves p, a Posterior, Explainer or Summary, as a plugin process
// and returns when the host closes it. It is all a plugin's main does:
//
//	func main() { sdk.Serve(myexplainer.New()) }
//
// Run by hand (without the host's magic cookie in the environment) it
// prints a note and exits with status 1; so does a value that is not a
// plugin or whose ID is not namespaced by its kind ("explainer.name").
// Serve owns stdout: print nothing to it, before or during Serve; log to
// stderr (the host shows a plugin's stderr in its log).
func Serve(p any) {
	cfg, err := ServeConfig(p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "uaxai plugin: %v\n", err)
		os.Exit(1)
	}
	goplugin.Serve(cfg)
}

// ServeConfig returns the go-plugin configuration Serve uses for p: the
// handshake, the gRPC protocol only, gRPC servers that accept messages up
// to MaxMessageSize, and JSON logs on stderr (which the host's go-plugin
// client re-levels into its own log). Tests set its Test field to serve p
// inside the test process (sdktest does).
func ServeConfig(p any) (*goplugin.ServeConfig, error) {
	return serveConfig(p, newModel)
}

func serveConfig(p any, build modelBuilder) (*goplugin.ServeConfig, error) {
	kind, info, err := checkInfo(p)
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
		HandshakeConfig: Handshake(),
		Plugins: goplugin.PluginSet{
			string(kind): &grpcPlugin{kind: kind, impl: p, id: info.ID, build: build, log: log},
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))
			return grpc.NewServer(opts...)
		},
		Logger: log,
	}, nil
}

// ClientPlugins is the go-plugin plugin set a host passes as
// ClientConfig.Plugins. Dispensing the kind's name ("posterior",
// "explainer", "summary") gives a value that implements that kind's
// interface (Posterior, Explainer, Summary) by calling the plugin process;
// it asks the plugin's Info once when dispensed. Its methods validate
// requests and answers and return errors that name the plugin; an error
// status from the plugin is visible to status.Code (codes.Unavailable
// when the process died), and a cancelled context to errors.Is.
func ClientPlugins() goplugin.PluginSet {
	return goplugin.PluginSet{
		string(KindPosterior): &grpcPlugin{kind: KindPosterior},
		string(KindExplainer): &grpcPlugin{kind: KindExplainer},
		string(KindSummary):   &grpcPlugin{kind: KindSummary},
	}
}

// GRPCDialOptions are the gRPC options a host passes as
// ClientConfig.GRPCDialOptions: calls send and accept messages up to
// MaxMessageSize.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
	}
}

// grpcPlugin is the go-plugin glue of one kind: on the plugin side it
// registers the kind's service around impl, on the host side it makes the
// kind's client.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	kind  Kind
	impl  any          // plugin side: the plugin
	id    string       // plugin side: its ID
	build modelBuilder // plugin side, explainers: how a draw becomes a model
	log   hclog.Logger // plugin side
}

// GRPCServer registers the kind's service.
func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	switch p.kind {
	case KindPosterior:
		pb.RegisterPosteriorServer(s, &posteriorServer{impl: p.impl.(Posterior), id: p.id, log: p.log})
	case KindExplainer:
		pb.RegisterExplainerServer(s, &explainerServer{impl: p.impl.(Explainer), id: p.id, log: p.log, models: &modelCache{build: p.build}})
	case KindSummary:
		pb.RegisterSummaryServer(s, &summaryServer{impl: p.impl.(Summary), id: p.id, log: p.log})
	default:
		return fmt.Errorf("unknown plugin kind %q", p.kind)
	}
	return nil
}

// GRPCClient makes the kind's client and asks the plugin's Info.
func (p *grpcPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	var (
		v   any
		id  string
		err error
	)
	switch p.kind {
	case KindPosterior:
		c := &posteriorClient{rpc: pb.NewPosteriorClient(conn)}
		var r *pb.PosteriorInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			c.info = PosteriorInfo{Info: decodeInfo(r.GetInfo()), Finite: r.GetFinite()}
			id = c.info.ID
		}
		v = c
	case KindExplainer:
		c := &explainerClient{rpc: pb.NewExplainerClient(conn)}
		var r *pb.ExplainerInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			c.info = ExplainerInfo{Info: decodeInfo(r.GetInfo()), Needs: Needs(r.GetNeeds()), Stochastic: r.GetStochastic()}
			id = c.info.ID
		}
		v = c
	case KindSummary:
		c := &summaryClient{rpc: pb.NewSummaryClient(conn)}
		var r *pb.SummaryInfo
		if r, err = c.rpc.Info(ctx, &pb.InfoRequest{}); err == nil {
			c.info = SummaryInfo{Info: decodeInfo(r.GetInfo()), Output: OutputKind(r.GetOutput()), MinDraws: int(r.GetMinDraws())}
			id = c.info.ID
		}
		v = c
	default:
		return nil, fmt.Errorf("unknown plugin kind %q", p.kind)
	}
	if err != nil {
		return nil, fmt.Errorf("asking the %s plugin for its Info: %w", p.kind, err)
	}
	if k, _, err := ParseID(id); err != nil {
		return nil, err
	} else if k != p.kind {
		return nil, fmt.Errorf("plugin %q serves the %s protocol but its ID says %s", id, p.kind, k)
	}
	return v, nil
}
