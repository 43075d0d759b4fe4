package driver

import (
	"context"
	"errors"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/internal/proto"
)

// Explainer is an explainer as the host drives it.
type Explainer interface {
	Info() sdk.Info
	// Check validates the explainer's recipe table without doing any work.
	Check(cfg sdk.Config) error
	// Load hands the explainer one draw's network: its parameters, or
	// the reference of the posterior's model service that serves it
	// (sdk.Draw.Served), to which the explainer's model calls then go.
	// The Model explains batches under that draw until it is closed.
	Load(ctx context.Context, draw sdk.Draw) (Model, error)
}

// Model is one draw loaded into an explainer. Its methods are safe for
// concurrent use.
type Model interface {
	// Explain returns one map per input of req (see sdk.Explainer).
	Explain(ctx context.Context, req sdk.ExplainRequest) ([][]float64, error)
	// Close releases the draw in the explainer; Explain fails after it.
	Close() error
}

var errClosed = errors.New("the model was closed")

// described holds the Info of a plugin that the host drives: the local
// wrappers and the gRPC clients of every kind embed it.
type described struct{ info sdk.Info }

func (d described) Info() sdk.Info { return d.info }

// Handshake is the go-plugin handshake of the uaxai protocol, which
// sdk.Serve uses too. A host and a plugin of different protocol versions
// refuse each other with a clear go-plugin error.
func Handshake() goplugin.HandshakeConfig { return proto.Handshake() }

// Timeouts bound the calls of a plugin that carry no context of their
// own: the Info call a client makes when it is dispensed, Check, and the
// Release of a loaded draw. A zero field means one minute.
type Timeouts struct {
	Info, Check, Release time.Duration
}

// defaultCallTimeout is a Timeouts field's zero value.
const defaultCallTimeout = time.Minute

func (t Timeouts) or(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return defaultCallTimeout
}

// PluginSet is the go-plugin plugin set a host passes as
// ClientConfig.Plugins. Dispensing a kind's name ("posterior",
// "explainer", "summary") gives an sdk.Posterior, an Explainer or an
// sdk.Summary that calls the plugin process; it asks the plugin's Info
// once when dispensed. An error status from the plugin is visible to
// status.Code (codes.Unavailable when the process died), and a cancelled
// context to errors.Is. Calls without a context are bounded by one
// minute; PluginSetWith sets other bounds.
func PluginSet() goplugin.PluginSet { return PluginSetWith(Timeouts{}) }

// PluginSetWith is PluginSet with the bounds t of the calls that carry no
// context.
func PluginSetWith(t Timeouts) goplugin.PluginSet { return PluginSetFor(Options{Timeouts: t}) }

// Options configure the clients of a PluginSetFor.
type Options struct {
	// Timeouts bound the calls that carry no context.
	Timeouts Timeouts
	// Models serves the networks of the explainers that want the model
	// service (sdk.Info.WantsModel). Without it, loading a draw into such
	// an explainer is an error. The caller closes it.
	Models *ModelService
	// ServeModels gives every explainer the model service, whether it
	// asked or not, when Models is set: a Go explainer then computes
	// through the host as a plugin in another language does (sdktest
	// runs an explainer both ways).
	ServeModels bool
	// ModelCall bounds each request the clients make to the model
	// service of a served draw (the Describe of each draw a posterior
	// serves, as its Sample is checked and as the draw is loaded into an
	// explainer): past it the request fails with an *sdk.CallTimeoutError.
	// Zero: no bound but the call's context.
	ModelCall sdk.CallLimit
}

// PluginSetFor is PluginSet with options.
func PluginSetFor(o Options) goplugin.PluginSet {
	t := o.Timeouts
	t = Timeouts{Info: t.or(t.Info), Check: t.or(t.Check), Release: t.or(t.Release)}
	set := goplugin.PluginSet{}
	for _, k := range []sdk.Kind{sdk.KindPosterior, sdk.KindExplainer, sdk.KindSummary} {
		set[string(k)] = &clientPlugin{kind: k, timeouts: t, models: o.Models, serveAll: o.ServeModels, modelCall: o.ModelCall}
	}
	return set
}

// DialOptions are the gRPC options a host passes as
// ClientConfig.GRPCDialOptions: calls send and accept messages up to the
// protocol's size limit (1 GiB; gRPC's default of 4 MB breaks batches).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(proto.MaxMessageSize), grpc.MaxCallSendMsgSize(proto.MaxMessageSize)),
	}
}
