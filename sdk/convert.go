package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/uaxai/uaxai/sdk/internal/check"
	"github.com/uaxai/uaxai/sdk/internal/pb"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
)

// This file converts between the sdk's types and the generated protocol
// types on the plugin side: it decodes requests and encodes answers (the
// host's side, in sdk/driver, does the reverse); nothing here is exported.

func encodeInfo(i Info) *pb.Info {
	return &pb.Info{Id: i.ID, Version: i.Version, Summary: i.Summary}
}

func decodeConfig(b []byte) (Config, error) {
	c, err := wire.DecodeConfig(b)
	if err != nil || c == nil {
		return nil, err
	}
	return Config(c), nil
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
	return out, check.Dataset(name, out.X, out.Y, out.N, out.Len)
}

func encodeArtifact(a Artifact) (*pb.Artifact, error) {
	return wire.Artifact(a.Arch, a.Tensors, a.Meta)
}

func decodeArtifact(a *pb.Artifact) (Artifact, error) {
	arch, tensors, meta, err := wire.DecodeArtifact(a)
	return Artifact{Arch: arch, Tensors: tensors, Meta: meta}, err
}

func decodeFitRequest(r *pb.FitRequest) (FitRequest, error) {
	arch, err := wire.DecodeArch(r.GetArchJson())
	if err != nil {
		return FitRequest{}, err
	}
	// Strict, as for the architecture: a plugin that silently dropped a
	// training setting it does not know would train another network.
	var tc nn.TrainConfig
	if len(r.GetTrainingJson()) > 0 {
		d := json.NewDecoder(bytes.NewReader(r.GetTrainingJson()))
		d.DisallowUnknownFields()
		if err := d.Decode(&tc); err != nil {
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
	if err := check.Part(r.GetPart(), r.GetParts()); err != nil {
		return FitRequest{}, err
	}
	if err := check.Replicate(r.GetReplicate()); err != nil {
		return FitRequest{}, err
	}
	req := FitRequest{Arch: arch, Train: train, Val: val, Training: tc, Config: cfg, Seed: r.GetSeed(), Workers: int(r.GetWorkers()),
		Part: int(r.GetPart()), Parts: int(r.GetParts()), Replicate: int(r.GetReplicate())}
	if r.GetBase() != nil {
		base, err := decodeArtifact(r.GetBase())
		if err != nil {
			return FitRequest{}, fmt.Errorf("base artifact: %w", err)
		}
		req.Base = &base
	}
	return req, nil
}

func encodeResult(r Result) *pb.Result {
	return &pb.Result{Map: wire.Float64Bytes(r.Map), Set: r.Set, Lower: wire.Float64Bytes(r.Lower), Upper: wire.Float64Bytes(r.Upper)}
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
