package driver

import (
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/sdk/internal/pb"
)

// FuzzCheckRaw: whatever bytes a plugin sends, checkRaw does not panic,
// and a request it lets through decodes into fields within their bounds
// (so that the decoder never allocates more than the bounds allow).
func FuzzCheckRaw(f *testing.F) {
	for _, mode := range []string{"starts", "targets", "layer"} {
		_, b := hostileRequest(mode, 7, 4)
		f.Add(b[:min(len(b), 64)]) // the head of each attack
	}
	ok, _ := gproto.Marshal(&pb.WindowsRequest{Handle: 3, X: make([]byte, 16), Targets: []int64{1}, Starts: []int64{0, 300, 1 << 40}, Width: 2, BaselineX: make([]byte, 16)})
	f.Add(ok)
	spans, _ := gproto.Marshal(&pb.SpansRequest{Handle: 3, X: make([]byte, 8), Bounds: []int64{0, 1, 2, 3}, Ends: []int64{1, 2}})
	f.Add(spans)
	f.Add([]byte{0x22, 0x03, 0x80, 0x80, 0x01}) // packed starts of one 3-byte varint
	f.Add([]byte{0x20, 0x01, 0x20, 0x02})       // unpacked starts
	f.Add([]byte{0x0b, 0x0c})                   // a group
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range serviceMethods {
			if checkRaw(m.name, b, m.limits) != nil {
				continue
			}
			var req gproto.Message
			switch m.name {
			case "Describe":
				req = &pb.ModelRef{}
			case "Probs", "InputGrad":
				req = &pb.ModelBatch{}
			case "Layer":
				req = &pb.LayerRequest{}
			case "Windows":
				req = &pb.WindowsRequest{}
			case "Spans":
				req = &pb.SpansRequest{}
			}
			if gproto.Unmarshal(b, req) != nil {
				continue
			}
			within(t, m.name, req)
		}
	})
}

// within fails if a decoded request has a field past its bound.
func within(t *testing.T, method string, req gproto.Message) {
	t.Helper()
	check := func(field string, n, most int) {
		if n > most {
			t.Fatalf("%s: checkRaw let through %s of %d; the bound is %d", method, field, n, most)
		}
	}
	switch r := req.(type) {
	case *pb.ModelBatch:
		check("x", len(r.GetX()), 4*MaxServiceValues)
		check("targets", len(r.GetTargets()), MaxServiceInputs)
	case *pb.LayerRequest:
		check("layer", len(r.GetLayer()), MaxServiceLayerName)
		check("x", len(r.GetX()), 4*MaxServiceValues)
		check("targets", len(r.GetTargets()), MaxServiceInputs)
	case *pb.WindowsRequest:
		check("x", len(r.GetX()), 4*MaxServiceValues)
		check("baseline_x", len(r.GetBaselineX()), 4*MaxServiceValues)
		check("targets", len(r.GetTargets()), MaxServiceInputs)
		check("starts", len(r.GetStarts()), MaxServiceStarts)
	case *pb.SpansRequest:
		check("x", len(r.GetX()), 4*MaxServiceValues)
		check("bounds", len(r.GetBounds()), 2*MaxServicePairs)
		check("ends", len(r.GetEnds()), MaxServicePerturbations)
	}
}
