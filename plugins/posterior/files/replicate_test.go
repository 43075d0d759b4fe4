package files

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// TestReplicatesRefused: networks read from files are the same in every
// replicate, so the plugin does not claim replicates (Info.Replicates is
// false) and Fit refuses a replicate other than 0, in process and through
// the host's driver, with an error that says why; replicate 0 reads the
// files as ever.
func TestReplicatesRefused(t *testing.T) {
	if New().Info().Replicates {
		t.Error("Info.Replicates is set; a files posterior cannot train a replicate of its own")
	}
	paths, _ := writeMembers(t, t.TempDir(), tinyArch(), 2)
	local, err := sdktest.HostPosterior(New())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]sdk.Posterior{"plugin": New(), "driver": local} {
		req := sdk.FitRequest{Arch: tinyArch(), Config: sdk.Config{"files": anyList(paths)}, Seed: 4}
		if a, err := p.Fit(context.Background(), req); err != nil || len(a.Tensors) != 2 {
			t.Errorf("%s: replicate 0: %d tensors, %v", name, len(a.Tensors), err)
		}
		for _, r := range []int{1, 5} {
			req.Replicate = r
			_, err := p.Fit(context.Background(), req)
			if err == nil || !strings.HasPrefix(err.Error(), "posterior.files: ") || !strings.Contains(err.Error(), fmt.Sprintf("replicate %d asked (accepted: replicate 0 only)", r)) ||
				!strings.Contains(err.Error(), "read from files, the same in every replicate") {
				t.Errorf("%s: replicate %d: %v, want a refusal that says why", name, r, err)
			}
		}
	}
}
