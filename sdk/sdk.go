package sdk

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk/nn"
)

// Kind is one of the three plugin kinds.
type Kind string

// The plugin kinds.
const (
	KindPosterior Kind = "posterior"
	KindExplainer Kind = "explainer"
	KindSummary   Kind = "summary"
)

// Plugin is what every plugin value is: something that describes itself.
// Posterior, Explainer and Summary embed it; Describe reads a plugin's
// kind and checks its Info.
type Plugin interface {
	Info() Info
}

// Info describes a plugin: its identity, and what the host must know of
// it before calling it. Only the fields of the plugin's own kind may be
// set; Describe rejects the others.
type Info struct {
	ID      string // namespaced by kind: "explainer.occlusion"
	Version string // the plugin's own version, e.g. "1.2.0"; part of cache keys
	Summary string // one line for `uaxai plugins`

	// Posteriors. A finite posterior (an ensemble of K members) returns
	// its members in order, and accepts at most K draws.
	Finite bool
	// Base, if set, is the ID of the posterior this one is fitted on top
	// of, post hoc (a Laplace approximation around "posterior.deterministic").
	// The host fits the base first, or takes it from its cache under the
	// base's own key, and passes its artifact as FitRequest.Base. The base
	// gets the keys BaseKeys of this posterior's table as its own table
	// (a shared training "seed"), so that a recipe's own deterministic
	// network with the same keys is the very network reused. A base has
	// no Base of its own.
	Base     string
	BaseKeys []string
	// Files lists the keys of this posterior's table whose values are
	// paths of files that Fit reads (a string or a list of strings). The
	// host resolves them relative to the recipe's folder before Check and
	// Fit, and keys its cache by the files' contents, so that a file
	// overwritten in place is never served from a stale entry.
	Files []string
	// Replicates says that the posterior derives its training seeds from
	// FitRequest.Replicate (sdk.ReplicateSeed): each replicate of an
	// experiment repeated over training seeds trains networks of its own,
	// even those whose seeds the recipe table fixes. The host runs a
	// recipe of more than one replicate only with posteriors that set it;
	// one whose fit cannot differ between replicates (networks read from
	// files) leaves it false, as does a plugin older than the field.
	Replicates bool
	// ServesModels says that the posterior serves its draws: it
	// implements DrawSampler, whose draws may be references to a model
	// service its own process serves (Draw.Served) instead of parameters,
	// and the host routes every explainer's model calls, and its own
	// predictions, to that service. The host never needs the parameters
	// of a served draw. A posterior whose networks are not sdk/nn
	// networks (a PyTorch module in a Python plugin) sets it.
	ServesModels bool

	// Explainers: what the explainer asks of the model, and whether it
	// draws random numbers (then it gets one seed per input).
	Needs      Needs
	Stochastic bool
	// WantsModel asks the host for the model service: the host keeps the
	// draw's network and computes what the explainer asks of it
	// (probabilities, gradients, a layer, occluded windows) in its own
	// process, and the plugin never receives the parameters. A plugin
	// written in a language without uaxai's network library needs it; a
	// Go explainer works either way and gets the same maps (the service
	// computes with sdk/nn too).
	WantsModel bool

	// Summaries: what the summary produces (required), and the fewest
	// draws it is defined for (the sample variance needs 2); the host
	// skips, and reports, a posterior with fewer.
	Output   OutputKind
	MinDraws int
}

// Posterior is a model distribution q_phi: it is fitted once on a training
// set (the host caches the Artifact) and then sampled.
type Posterior interface {
	Plugin
	// Check validates the plugin's recipe table without doing any work.
	// draws is the number of draws S the recipe asks for, so that a finite
	// posterior can reject more draws than it has members.
	Check(cfg Config, draws int) error
	// Fit trains or post-processes and returns everything Sample needs.
	Fit(ctx context.Context, req FitRequest) (Artifact, error)
	// Sample returns len(req.Seeds) parameter draws theta_1..theta_S. Draw
	// s must depend only on (artifact, config, s, req.Seeds[s]): a finite
	// posterior returns its members in order and may ignore the seeds.
	Sample(ctx context.Context, a Artifact, req SampleRequest) ([]nn.Params, error)
}

// Dataset is a labelled set of waveforms, X holding N rows of Len values:
// the network library's nn.Data, so that a posterior trains on its
// FitRequest's sets as they are.
type Dataset = nn.Data

// FitRequest is what a posterior is fitted on.
type FitRequest struct {
	Arch     nn.Arch
	Train    Dataset
	Val      Dataset
	Training nn.TrainConfig // the recipe's [train] table
	Config   Config         // the posterior's own recipe table
	Seed     uint64         // base seed; members derive theirs from it or from Config
	Workers  int            // goroutines the plugin may use (0: all cores)
	// Base is the fitted artifact of the posterior named by Info.Base, for
	// a post-hoc posterior; nil otherwise.
	Base *Artifact
	// Part and Parts ask for one part of a parted fit (see Parted): with
	// Parts > 0, Fit returns the artifact of part Part (0 <= Part < Parts)
	// only. Parts is 0 for a whole fit.
	Part, Parts int
	// Replicate r >= 0 is the replicate this fit belongs to when the
	// recipe repeats the experiment over training seeds ([replicates]):
	// Seed is then the replicate's seed, and replicate 0 is the run
	// without replicates. A posterior that sets Info.Replicates maps every
	// training seed it uses, from Config or from Seed, through
	// ReplicateSeed, so that replicates r >= 1 train independent networks.
	// A negative Replicate is refused before Fit.
	Replicate int
	// Progress, if not nil, receives progress reports during Fit. Over
	// gRPC the reports are streamed to the host, which draws a progress bar.
	Progress func(Progress) `json:"-"`
}

// Progress is one progress report of a long call.
type Progress struct {
	Done, Total int    // units of work done and in all (epochs, members, ...)
	Message     string // e.g. "member 2 epoch 14 loss 0.0831 val_acc 0.972"
}

// Artifact is a fitted posterior: the architecture and named float32
// tensors (ensemble members, a MAP estimate and its precision, ...), plus
// string metadata. The host stores it as safetensors in its cache, and
// reports Meta with each result row of the posterior (results.json "fit");
// a Meta entry "note" (say, a calibration that found no root) also goes to
// the run's notes.
type Artifact struct {
	Arch    nn.Arch
	Tensors map[string][]float32
	Meta    map[string]string
}

// SampleRequest asks for len(Seeds) draws; draw s uses Seeds[s].
type SampleRequest struct {
	Seeds  []uint64
	Config Config
	// SocketDir, given to a posterior that serves its draws
	// (Info.ServesModels), is a private directory (mode 0700) that the
	// host made for the sockets of its model services: every served
	// draw's address is a socket directly inside it.
	SocketDir string
}

// Needs says what an explainer asks of the model.
type Needs uint8

// The model capabilities an explainer can need.
const (
	NeedsProbs Needs = 1 << iota
	NeedsInputGrad
	NeedsLayer
)

// Explainer is an attribution operator tau_x(theta, xi).
type Explainer interface {
	Plugin
	// Check validates the plugin's recipe table without doing any work.
	Check(cfg Config) error
	// Explain returns one map per input of req: len(result) == len(req.Targets),
	// each of length m.InputLen(). Maps stay signed.
	Explain(ctx context.Context, m nn.Model, req ExplainRequest) ([][]float64, error)
}

// ExplainRequest is a batch of inputs to explain under one model draw.
type ExplainRequest struct {
	X       []float32 // B inputs, InputLen values each
	Targets []int     // the class explained for each input
	Seeds   []uint64  // one per input, for stochastic explainers
	Config  Config
}

// OutputKind is what a summary produces.
type OutputKind string

// The summary output kinds.
const (
	OutputMap  OutputKind = "map"  // a real-valued relevance map
	OutputSet  OutputKind = "set"  // a binary index set
	OutputBand OutputKind = "band" // a lower and an upper map
)

// Summary is a UA-RAO summary functional Phi applied to the empirical
// explanation distribution of each input.
type Summary interface {
	Plugin
	// Check validates the plugin's recipe table without doing any work.
	Check(cfg Config) error
	// Summarise takes a batch of inputs; draws[i] holds the S maps of input
	// i (draws[i][s] has N values). It returns one Result per input.
	Summarise(ctx context.Context, draws [][][]float64, cfg Config) ([]Result, error)
}

// Result is one summary of one input: Map for OutputMap, Set for
// OutputSet, Lower and Upper for OutputBand.
type Result struct {
	Map          []float64
	Set          []bool
	Lower, Upper []float64
}

// BaseNetwork is the network of a post-hoc posterior's base artifact
// (FitRequest.Base, the fit of posterior base), held under the tensor
// name: its architecture, layout and parameters (not copied). Errors name
// the posterior id: no base, an architecture without a layout, or no
// tensor name of the layout's size.
func BaseNetwork(id, base, name string, req FitRequest) (nn.Arch, *nn.Layout, []float32, error) {
	if req.Base == nil {
		return nn.Arch{}, nil, nil, fmt.Errorf("%s: no base artifact (the host fits %s first and passes it as FitRequest.Base)", id, base)
	}
	arch := req.Base.Arch
	lay, err := nn.NewLayout(arch)
	if err != nil {
		return nn.Arch{}, nil, nil, fmt.Errorf("%s: base artifact: %w", id, err)
	}
	theta, ok := req.Base.Tensors[name]
	if !ok || len(theta) != lay.Size {
		return nn.Arch{}, nil, nil, fmt.Errorf("%s: the base artifact has no network %q of %d parameters (arch %q); is the base %s?", id, name, lay.Size, arch.Name, base)
	}
	return arch, lay, theta, nil
}
