package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file converts between the sdk's types and the generated protocol
// types; nothing here is exported.

func encodeInfo(i Info) *pb.Info {
	return &pb.Info{Id: i.ID, Version: i.Version, Summary: i.Summary}
}

func decodeInfo(i *pb.Info) Info {
	return Info{ID: i.GetId(), Version: i.GetVersion(), Summary: i.GetSummary()}
}

func encodeConfig(c Config) ([]byte, error) { return wire.Config(c) }

func decodeConfig(b []byte) (Config, error) {
	c, err := wire.DecodeConfig(b)
	if err != nil || c == nil {
		return nil, err
	}
	return Config(c), nil
}

func encodeDataset(d Dataset) *pb.Dataset {
	return &pb.Dataset{X: wire.Float32Bytes(d.X), Y: wire.Int64s(d.Y), N: int64(d.N), Len: int64(d.Len)}
}

func decodeDataset(name string, d *pb.Dataset) (Dataset, error) {
	if d == nil {
		return Dataset{}, nil
	}
	x, err := wire.Float32s(d.GetX())
	if err != nil {
		return Dataset{}, fmt.Errorf("%s set: %w", name, err)
	}
	out := Dataset{X: x, Y: wire.Ints(d.GetY()), N: int(d.GetN()), Len: int(d.GetLen())}
	return out, checkDataset(name, out)
}

func encodeArtifact(a Artifact) (*pb.Artifact, error) {
	arch, err := wire.Arch(a.Arch)
	if err != nil {
		return nil, err
	}
	out := &pb.Artifact{ArchJson: arch, Meta: a.Meta}
	if a.Tensors != nil {
		out.Tensors = make(map[string][]byte, len(a.Tensors))
		for k, v := range a.Tensors {
			out.Tensors[k] = wire.Float32Bytes(v)
		}
	}
	return out, nil
}

func decodeArtifact(a *pb.Artifact) (Artifact, error) {
	if a == nil {
		return Artifact{}, fmt.Errorf("missing artifact")
	}
	arch, err := wire.DecodeArch(a.GetArchJson())
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact: %w", err)
	}
	out := Artifact{Arch: arch, Meta: a.GetMeta()}
	if len(a.GetTensors()) > 0 {
		out.Tensors = make(map[string][]float32, len(a.GetTensors()))
		for k, v := range a.GetTensors() {
			t, err := wire.Float32s(v)
			if err != nil {
				return Artifact{}, fmt.Errorf("artifact tensor %q: %w", k, err)
			}
			if t == nil {
				t = []float32{}
			}
			out.Tensors[k] = t
		}
	}
	return out, nil
}

func encodeFitRequest(r FitRequest) (*pb.FitRequest, error) {
	arch, err := wire.Arch(r.Arch)
	if err != nil {
		return nil, err
	}
	tr, err := json.Marshal(r.Training)
	if err != nil {
		return nil, fmt.Errorf("encoding training config: %w", err)
	}
	cfg, err := encodeConfig(r.Config)
	if err != nil {
		return nil, err
	}
	return &pb.FitRequest{
		ArchJson: arch, Train: encodeDataset(r.Train), Val: encodeDataset(r.Val),
		TrainingJson: tr, ConfigJson: cfg, Seed: r.Seed, Workers: int64(r.Workers),
	}, nil
}

func decodeFitRequest(r *pb.FitRequest) (FitRequest, error) {
	arch, err := wire.DecodeArch(r.GetArchJson())
	if err != nil {
		return FitRequest{}, err
	}
	var tc nn.TrainConfig
	if len(r.GetTrainingJson()) > 0 {
		if err := json.Unmarshal(r.GetTrainingJson(), &tc); err != nil {
			return FitRequest{}, fmt.Errorf("decoding training config: %w", err)
		}
	}
	cfg, err := decodeConfig(r.GetConfigJson())
	if err != nil {
		return FitRequest{}, err
	}
	train, err := decodeDataset("training", r.GetTrain())
	if err != nil {
		return FitRequest{}, err
	}
	val, err := decodeDataset("validation", r.GetVal())
	if err != nil {
		return FitRequest{}, err
	}
	return FitRequest{Arch: arch, Train: train, Val: val, Training: tc, Config: cfg, Seed: r.GetSeed(), Workers: int(r.GetWorkers())}, nil
}

func encodeResult(r Result) *pb.Result {
	return &pb.Result{Map: wire.Float64Bytes(r.Map), Set: r.Set, Lower: wire.Float64Bytes(r.Lower), Upper: wire.Float64Bytes(r.Upper)}
}

func decodeResult(r *pb.Result) (Result, error) {
	var out Result
	var err error
	if out.Map, err = wire.Float64s(r.GetMap()); err != nil {
		return Result{}, fmt.Errorf("map: %w", err)
	}
	if out.Lower, err = wire.Float64s(r.GetLower()); err != nil {
		return Result{}, fmt.Errorf("lower: %w", err)
	}
	if out.Upper, err = wire.Float64s(r.GetUpper()); err != nil {
		return Result{}, fmt.Errorf("upper: %w", err)
	}
	if len(r.GetSet()) > 0 {
		out.Set = r.GetSet()
	}
	return out, nil
}

// encodeDraws flattens the S x N draws of each input.
func encodeDraws(draws [][][]float64) []*pb.Draws {
	out := make([]*pb.Draws, len(draws))
	for i, d := range draws {
		n := len(d[0])
		flat := make([]float64, 0, len(d)*n)
		for _, r := range d {
			flat = append(flat, r...)
		}
		out[i] = &pb.Draws{S: int64(len(d)), N: int64(n), Data: wire.Float64Bytes(flat)}
	}
	return out
}

func decodeDraws(in []*pb.Draws) ([][][]float64, error) {
	out := make([][][]float64, len(in))
	for i, d := range in {
		rows, err := wire.Float64Rows(d.GetData(), int(d.GetS()), int(d.GetN()))
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		out[i] = rows
	}
	return out, nil
}
