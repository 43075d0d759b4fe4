package mcdropout

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ID is the plugin's ID.
const ID = "posterior.mcdropout"

// Version is the plugin's version.
const Version = "1.0.0"

// DefaultP is the dropout probability when the recipe gives none.
const DefaultP = 0.2

// Posterior is MC dropout.
type Posterior struct{}

// New returns the MC-dropout posterior.
func New() *Posterior { return &Posterior{} }

// Info describes the plugin.
func (*Posterior) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: Version, Summary: "MC dropout on the last dense layer's input, folded into each draw (p, seed)",
		Replicates: true}
}

type config struct {
	p       float64
	seed    uint64
	hasSeed bool
}

func parse(cfg sdk.Config) (config, error) {
	if err := cfg.Only("p", "seed"); err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	p, err := cfg.Float("p", DefaultP)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", ID, err)
	}
	if !(p > 0 && p < 1) {
		return config{}, fmt.Errorf("%s: key %q: %v is out of range (accepted: 0 < p < 1)", ID, "p", p)
	}
	c := config{p: p}
	if _, ok := cfg["seed"]; ok {
		s, err := cfg.Int("seed", 0)
		if err != nil || s < 0 {
			return config{}, fmt.Errorf("%s: key %q: want a nonnegative integer, got %v", ID, "seed", cfg["seed"])
		}
		c.seed, c.hasSeed = uint64(s), true
	}
	return c, nil
}

// Check validates "p" and "seed"; any number of draws >= 1 is accepted.
func (*Posterior) Check(cfg sdk.Config, draws int) error {
	if _, err := parse(cfg); err != nil {
		return err
	}
	return sdk.CheckDraws(ID, draws)
}

// WithDropout returns a with a dropout node of probability p, named
// DropoutNode, inserted before its output node, which must be linear (the
// paper's fc2, a dense layer) and then reads the dropout; the result is
// a graph (its Layers nil).
func WithDropout(a nn.Arch, p float64) (nn.Arch, error) {
	net, err := a.GraphNet()
	if err != nil {
		return nn.Arch{}, err
	}
	spec := net.Spec()
	out, err := spec.OutputIndex()
	if err != nil {
		return nn.Arch{}, err
	}
	last := spec.Nodes[out]
	if last.Op != "linear" {
		return nn.Arch{}, fmt.Errorf("arch %q: MC dropout needs a linear output node (a dense last layer), whose input the dropout masks; the output %q is %s", a.Name, last.Name, last.Op)
	}
	for _, nd := range spec.Nodes {
		if nd.Op == "dropout" || nd.Name == DropoutNode {
			return nn.Arch{}, fmt.Errorf("arch %q already has a dropout node %q (accepted: an arch without one; the posterior adds %q)", a.Name, nd.Name, DropoutNode)
		}
	}
	src, err := spec.InputIndex(out, 0)
	if err != nil {
		return nn.Arch{}, err
	}
	from := graph.Input
	if src >= 0 {
		from = spec.Nodes[src].Name
	}
	drop := graph.Node{Name: DropoutNode, Op: "dropout", Inputs: []string{from}, Attrs: map[string]any{"p": p}}
	last.Inputs = []string{DropoutNode}
	nodes := append([]graph.Node(nil), spec.Nodes[:out]...)
	nodes = append(nodes, drop, last)
	nodes = append(nodes, spec.Nodes[out+1:]...)
	spec.Nodes = nodes
	spec.Output = last.Name
	b := a
	b.Graph, b.Layers = &spec, nil
	if err := b.Validate(); err != nil {
		return nn.Arch{}, err
	}
	return b, nil
}

// Fit trains the network with dropout. The artifact holds its parameters
// ("map") under the dropout architecture, and p.
func (*Posterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	c, err := parse(req.Config)
	if err != nil {
		return sdk.Artifact{}, err
	}
	a, err := WithDropout(req.Arch, c.p)
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
	}
	seed := req.Seed
	if c.hasSeed {
		seed = c.seed
	}
	seed = sdk.ReplicateSeed(seed, req) // a network of its own in replicate r >= 1
	res, err := nn.Train(ctx, a, req.Train, req.Val, req.Training, seed, nn.TrainOptions{
		Workers: req.Workers,
		Progress: func(r nn.EpochReport) {
			if req.Progress != nil {
				req.Progress(sdk.Progress{Done: r.Epoch, Total: r.Epochs, Message: fmt.Sprintf("epoch %d/%d loss %.4f val_loss %.4f val_acc %.4f", r.Epoch, r.Epochs, r.TrainLoss, r.ValLoss, r.ValAcc)})
			}
		},
	})
	if err != nil {
		return sdk.Artifact{}, fmt.Errorf("%s: %w", ID, err)
	}
	return sdk.Artifact{Arch: a, Tensors: map[string][]float32{"map": res.Params.Data},
		Meta: map[string]string{"p": strconv.FormatFloat(c.p, 'g', -1, 64), "seed": strconv.FormatUint(seed, 10)}}, nil
}

// Sample folds one keep mask a seed into the trained network.
func (*Posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	data, ok := a.Tensors["map"]
	if !ok {
		return nil, fmt.Errorf("%s: the artifact has no tensor \"map\"", ID)
	}
	units, ps, err := nn.DropoutInputs(a.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ID, err)
	}
	if len(units) != 1 {
		return nil, fmt.Errorf("%s: arch %q has %d dropout layers (want the one Fit adds)", ID, a.Arch.Name, len(units))
	}
	mask := make([]bool, units[0])
	p := ps[0]
	out := make([]nn.Params, len(req.Seeds))
	for s, seed := range req.Seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		Mask(mask, p, seed)
		fa, fp, err := nn.FoldDropout(a.Arch, data, [][]bool{mask})
		if err != nil {
			return nil, fmt.Errorf("%s: draw %d: %w", ID, s, err)
		}
		out[s] = nn.Params{Arch: fa, Data: fp}
	}
	return out, nil
}

// Mask draws the keep mask of one draw: dst[i] is true with probability
// 1-p, from the stream of seed.
func Mask(dst []bool, p float64, seed uint64) []bool {
	r := rng.New(rng.Key(seed, "mcdropout-mask", "", -1, -1))
	for i := range dst {
		dst[i] = r.Float64() >= p
	}
	return dst
}

// DropoutNode is the name of the dropout node WithDropout inserts.
const DropoutNode = "mc_dropout"
