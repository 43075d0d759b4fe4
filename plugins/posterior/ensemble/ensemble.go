package ensemble

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ID is the plugin's ID.
const ID = "posterior.ensemble"

// Version is the plugin's version.
const Version = "1.1.0"

// Posterior trains K members. The deterministic baseline is the same code
// with K = 1 (see New and NewDeterministic).
type Posterior struct {
	id, summary   string
	defaultK      int
	allowMembers  bool
	defaultSeedOf func(req sdk.FitRequest, k int) uint64
}

// New returns the ensemble posterior.
func New() *Posterior {
	return &Posterior{id: ID, summary: "deep ensemble of K independently trained members (members, seeds)", defaultK: 5, allowMembers: true,
		defaultSeedOf: func(req sdk.FitRequest, k int) uint64 { return rng.Key(req.Seed, "ensemble-member", "", k, -1) }}
}

// NewDeterministic returns "posterior.deterministic": one trained network,
// a point mass at its parameters.
func NewDeterministic() *Posterior {
	return &Posterior{id: "posterior.deterministic", summary: "one trained network (seed)", defaultK: 1,
		defaultSeedOf: func(req sdk.FitRequest, _ int) uint64 { return req.Seed }}
}

// Info describes the plugin: finite, and its members' seeds follow
// FitRequest.Replicate (Replicates).
func (p *Posterior) Info() sdk.Info {
	return sdk.Info{ID: p.id, Version: Version, Summary: p.summary, Finite: true, Replicates: true}
}

type config struct {
	seeds []uint64
	k     int // members
}

func (p *Posterior) parse(cfg sdk.Config, req *sdk.FitRequest) (config, error) {
	allowed := []string{"seed"}
	if p.allowMembers {
		allowed = []string{"members", "seeds"}
	}
	if err := cfg.Only(allowed...); err != nil {
		return config{}, fmt.Errorf("%s: %w", p.id, err)
	}
	k := p.defaultK
	var seeds []uint64
	if p.allowMembers {
		var err error
		if k, err = cfg.IntRange("members", p.defaultK, 1, 1000); err != nil {
			return config{}, fmt.Errorf("%s: %w", p.id, err)
		}
		if v, ok := cfg["seeds"]; ok {
			list, ok := v.([]any)
			if !ok {
				return config{}, fmt.Errorf("%s: key \"seeds\": want a list of integers, got %T", p.id, v)
			}
			if _, has := cfg["members"]; has && len(list) != k {
				return config{}, fmt.Errorf("%s: key \"seeds\" has %d entries, members = %d", p.id, len(list), k)
			}
			k = len(list)
			if k == 0 {
				return config{}, fmt.Errorf("%s: key \"seeds\" is empty (accepted: one nonnegative integer a member)", p.id)
			}
			for i := range list {
				s, err := sdk.Config{"s": list[i]}.Int("s", 0)
				if err != nil || s < 0 {
					return config{}, fmt.Errorf("%s: key \"seeds\" entry %d: want a nonnegative integer, got %v", p.id, i, list[i])
				}
				seeds = append(seeds, uint64(s))
			}
		}
	} else if _, ok := cfg["seed"]; ok {
		s, err := cfg.Int("seed", 0)
		if err != nil || s < 0 {
			return config{}, fmt.Errorf("%s: key \"seed\": want a nonnegative integer, got %v", p.id, cfg["seed"])
		}
		seeds = []uint64{uint64(s)}
	}
	if seeds == nil && req != nil {
		for i := 0; i < k; i++ {
			seeds = append(seeds, p.defaultSeedOf(*req, i))
		}
	}
	// In replicate r >= 1 every member trains from a seed of its own, the
	// table's included (sdk.ReplicateSeed); replicate 0 keeps them.
	if req != nil {
		for i, s := range seeds {
			seeds[i] = sdk.ReplicateSeed(s, *req)
		}
	}
	return config{seeds: seeds, k: k}, nil
}

// Check validates the recipe table: members (>= 1, default 5) and seeds
// (one nonnegative integer a member; default: keyed streams of the recipe
// seed) for the ensemble, seed for the deterministic baseline; and the
// recipe's draws, which may not exceed the members. In replicate r >= 1
// of an experiment (FitRequest.Replicate) Fit trains member i from
// sdk.ReplicateSeed(seed_i, req) instead of seed_i, and records that seed
// in the artifact's Meta ("seed.<i>").
func (p *Posterior) Check(cfg sdk.Config, draws int) error {
	c, err := p.parse(cfg, nil)
	if err != nil {
		return err
	}
	if draws < 1 || draws > c.k {
		return fmt.Errorf("%s: key \"draws\": %d draws of a finite posterior of %d member(s) (accepted: 1..%d)", p.id, draws, c.k, c.k)
	}
	return nil
}

// Parts is the number of members K (sdk.Parted): each member is a part
// of the fit that trains on its own, so that the host can fit the members
// as separate units of work. The deterministic baseline has one member,
// so its fit is not parted. The errors are Check's.
func (p *Posterior) Parts(cfg sdk.Config) (int, error) {
	c, err := p.parse(cfg, nil)
	if err != nil {
		return 0, err
	}
	return c.k, nil
}

// Fit trains the members, up to Workers at a time, each on one goroutine
// (a member's result does not depend on how many run beside it). With
// req.Parts > 0 it trains member req.Part alone, from the seed it has in
// the whole fit and with all the workers: the artifact holds the tensor
// member.<Part> and the Meta "members" and "seed.<Part>", so that the
// union of the K parts is the whole fit's artifact, bit for bit.
func (p *Posterior) Fit(ctx context.Context, req sdk.FitRequest) (sdk.Artifact, error) {
	c, err := p.parse(req.Config, &req)
	if err != nil {
		return sdk.Artifact{}, err
	}
	k := len(c.seeds)
	todo := make([]int, k)
	for i := range todo {
		todo[i] = i
	}
	if req.Parts > 0 {
		if req.Parts != k {
			return sdk.Artifact{}, fmt.Errorf("%s: part %d of %d parts asked of a fit of %d member(s) (parts must be the members, %d)", p.id, req.Part, req.Parts, k, k)
		}
		if req.Part < 0 || req.Part >= k {
			return sdk.Artifact{}, fmt.Errorf("%s: part %d of %d parts (accepted: 0..%d)", p.id, req.Part, req.Parts, k-1)
		}
		todo = []int{req.Part}
	}
	members, err := p.train(ctx, req, c.seeds, todo)
	if err != nil {
		return sdk.Artifact{}, err
	}
	a := sdk.Artifact{Arch: req.Arch, Tensors: map[string][]float32{}, Meta: map[string]string{"members": strconv.Itoa(k)}}
	for j, i := range todo {
		a.Tensors[memberName(i)] = members[j]
		a.Meta["seed."+strconv.Itoa(i)] = strconv.FormatUint(c.seeds[i], 10)
	}
	return a, nil
}

// train trains the members todo (indices into seeds) and returns their
// parameters in the order of todo. The workers are shared among them:
// min(workers, len(todo)) members at a time, each with
// max(1, workers/len(todo)) goroutines.
func (p *Posterior) train(ctx context.Context, req sdk.FitRequest, seeds []uint64, todo []int) ([][]float32, error) {
	k, n := len(seeds), len(todo)
	workers := req.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	perMember := 1
	if workers > n {
		perMember = workers / n
	}
	members := make([][]float32, n)
	errs := make([]error, n)
	var mu sync.Mutex
	done := 0
	total := n * req.Training.Epochs
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, min(workers, n))
	var wg sync.WaitGroup
	for j, i := range todo {
		wg.Add(1)
		go func(j, i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[j] = ctx.Err()
				return
			}
			res, err := nn.Train(ctx, req.Arch, req.Train, req.Val, req.Training, seeds[i], nn.TrainOptions{
				Workers: perMember,
				Progress: func(r nn.EpochReport) {
					if req.Progress == nil {
						return
					}
					mu.Lock()
					done++
					d := done
					mu.Unlock()
					req.Progress(sdk.Progress{Done: d, Total: total, Message: fmt.Sprintf("member %d/%d (seed %d) epoch %d/%d loss %.4f val_loss %.4f val_acc %.4f",
						i+1, k, seeds[i], r.Epoch, r.Epochs, r.TrainLoss, r.ValLoss, r.ValAcc)})
				},
			})
			if err != nil {
				errs[j] = fmt.Errorf("%s: member %d (seed %d): %w", p.id, i, seeds[i], err)
				cancel()
				return
			}
			members[j] = res.Params.Data
		}(j, i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return members, nil
}

func memberName(i int) string { return "member." + strconv.Itoa(i) }

// Sample returns members 0..S-1; the seeds are not used (the ensemble is
// finite and its draws are its members, in order).
func (p *Posterior) Sample(ctx context.Context, a sdk.Artifact, req sdk.SampleRequest) ([]nn.Params, error) {
	k := 0
	for {
		if _, ok := a.Tensors[memberName(k)]; !ok {
			break
		}
		k++
	}
	if len(req.Seeds) > k {
		return nil, fmt.Errorf("%s: %d draws asked of a finite posterior of %d members (draws must be <= %d)", p.id, len(req.Seeds), k, k)
	}
	lay, err := nn.NewLayout(a.Arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.id, err)
	}
	out := make([]nn.Params, len(req.Seeds))
	for s := range out {
		d := a.Tensors[memberName(s)]
		if len(d) != lay.Size {
			return nil, fmt.Errorf("%s: artifact tensor %s has %d values, arch %q needs %d", p.id, memberName(s), len(d), a.Arch.Name, lay.Size)
		}
		out[s] = nn.Params{Arch: a.Arch, Data: append([]float32(nil), d...)}
	}
	return out, nil
}
