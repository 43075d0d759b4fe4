package analysis

import (
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// Batch is the engine's callback; Finish gives the report once the
// engine has run.

// Finish aggregates the per-record results into the report. res gives the
// rows (for the paired difference and the per-class figure).
func (a *Analyser) Finish(res *engine.Results) (*Report, error) {
	rep := &Report{JSON: map[string]any{}}
	if len(a.s.Analysis.Paper) > 0 {
		for _, id := range a.s.Analysis.Paper {
			if id == "tab:bnn_results" {
				t, js := Paired(res)
				rep.Tables = append(rep.Tables, t)
				rep.JSON["paired_disc7_iou"] = js
			}
		}
	}
	a.sensitivity(rep)
	a.calibration(rep)
	a.agreement(rep)
	a.bound(rep)
	a.totalVariance(rep)
	if err := a.metricsReport(rep); err != nil {
		return nil, err
	}
	a.randomisedReport(rep)
	if err := a.figures(rep, res); err != nil {
		return nil, err
	}
	if a.s.Analysis.Output.Maps {
		files, err := a.mapFiles()
		if err != nil {
			return nil, err
		}
		rep.Files = append(rep.Files, files...)
	}
	return rep, nil
}

// mapFiles writes, for every (posterior, explainer) pair, the draws' maps
// of every explained record as maps/<i>-<posterior>_<explainer>.safetensors
// (tensor "maps" [records, S, N]; "split", "record", "label", "target",
// "predicted" [records], integers stored as F32, exact below 2^24), and
// each map summary's maps as maps/<i>-<posterior>_<explainer>_<summary>.safetensors
// (tensor "map" [records, N] and the same index tensors), records in
// split and record order. With C > 1 channels N is (C, T): "maps"
// [records, S, C, T] and "map" [records, C, T], channel-major, and the
// metadata key "channels" names them (comma-separated). NumPy:
// safetensors.numpy.load_file(path).
func (a *Analyser) mapFiles() ([]File, error) {
	var out []File
	for pi, p := range a.orderedPairs() {
		var recs []*record
		var split, index []float32
		for si, rs := range p.recs {
			for ri, r := range rs {
				if r != nil && r.maps != nil {
					recs = append(recs, r)
					split = append(split, float32(si))
					index = append(index, float32(ri))
				}
			}
		}
		if len(recs) == 0 {
			continue
		}
		S, N := len(recs[0].maps), len(recs[0].maps[0])
		idx := func() []safetensors.Tensor {
			lab, tgt, prd := make([]float32, len(recs)), make([]float32, len(recs)), make([]float32, len(recs))
			for i, r := range recs {
				lab[i], tgt[i], prd[i] = float32(r.label), float32(r.target), float32(r.pred)
			}
			sh := []int{len(recs)}
			return []safetensors.Tensor{{Name: "split", Shape: sh, Data: split}, {Name: "record", Shape: sh, Data: index},
				{Name: "label", Shape: sh, Data: lab}, {Name: "target", Shape: sh, Data: tgt}, {Name: "predicted", Shape: sh, Data: prd}}
		}
		all := make([]float32, 0, len(recs)*S*N)
		for _, r := range recs {
			for _, m := range r.maps {
				all = append(all, m...)
			}
		}
		meta := map[string]string{"posterior": p.post, "explainer": p.exp, "format": "uaxai-maps-1"}
		// With C > 1 channels a map is (C, T), channel-major, and the
		// metadata names the channels; one channel keeps its (N) shape.
		shape := []int{N}
		if ts := a.s.Tests; len(ts) > 0 && ts[0].NumChannels() > 1 {
			c := ts[0].NumChannels()
			shape = []int{c, N / c}
			meta["channels"] = strings.Join(ts[0].ChannelLabels(), ",")
		}
		b, err := safetensors.Encode(append(idx(), safetensors.Tensor{Name: "maps", Shape: append([]int{len(recs), S}, shape...), Data: all}), meta)
		if err != nil {
			return nil, fmt.Errorf("maps of %s / %s: %w", p.post, p.exp, err)
		}
		base := fmt.Sprintf("maps/%02d-%s_%s", pi+1, report.Slug(p.post), report.Slug(p.exp))
		out = append(out, File{Name: base + ".safetensors", Data: b})
		for si, label := range a.s.Summaries {
			if si >= len(recs[0].sums) || recs[0].sums[si] == nil {
				continue
			}
			sm := make([]float32, 0, len(recs)*N)
			for _, r := range recs {
				sm = append(sm, r.sums[si]...)
			}
			m2 := map[string]string{"posterior": p.post, "explainer": p.exp, "summary": label, "format": "uaxai-maps-1"}
			if c, ok := meta["channels"]; ok {
				m2["channels"] = c
			}
			b, err := safetensors.Encode(append(idx(), safetensors.Tensor{Name: "map", Shape: append([]int{len(recs)}, shape...), Data: sm}), m2)
			if err != nil {
				return nil, fmt.Errorf("maps of %s / %s / %s: %w", p.post, p.exp, label, err)
			}
			out = append(out, File{Name: base + "_" + report.Slug(label) + ".safetensors", Data: b})
		}
	}
	return out, nil
}
