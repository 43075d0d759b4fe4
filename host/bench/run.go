package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/uaxai/uaxai/sdk/nn"
)

// Options configure Run.
type Options struct {
	Seed    uint64
	Reps    int           // runs of each case at least (each run makes Batch maps)
	MinTime time.Duration // and for at least this long
	// Reference, if set, runs the PyTorch harness after our cases, in
	// the same invocation, and puts its medians beside ours.
	Reference bool
	Ref       ReferenceOptions
}

// Run measures every case, runs the reference if asked, and prints the
// table to w; progress goes to logw.
func Run(ctx context.Context, o Options, w, logw io.Writer) error {
	fmt.Fprintf(logw, "bench: training the network and making the inputs (seed %d)\n", o.Seed)
	s, err := NewSetup(ctx, o.Seed)
	if err != nil {
		return err
	}
	loadBefore := loadAvg()
	var res []Result
	for _, c := range s.Cases() {
		fmt.Fprintf(logw, "bench: %s\n", c.Name)
		r, err := Measure(ctx, c, o.Reps, o.MinTime)
		if err != nil {
			return err
		}
		res = append(res, r)
	}
	loadOurs := loadAvg()
	var ref *Reference
	refNote := "reference not run (--reference=false)"
	if o.Reference {
		fmt.Fprintf(logw, "bench: PyTorch reference: %s %s bench --threads %d --n %d\n", o.Ref.Python, o.Ref.Script, o.Ref.Threads, o.Ref.N)
		ref, err = RunReference(ctx, o.Ref)
		switch {
		case err == nil:
			refNote = fmt.Sprintf("reference measured in this run: torch %s, %d threads, median over %d waveforms", ref.Torch, o.Ref.Threads, o.Ref.N)
		case errors.Is(err, ErrNoTorch) || errors.Is(err, os.ErrNotExist):
			refNote = fmt.Sprintf("reference not measured: %v", err)
		default:
			return err
		}
	}
	loadAfter := loadAvg()
	fmt.Fprintf(w, "uaxai bench: paper-1dcnn (640 samples, 16 classes), one goroutine a map, kernels %s (UAXAI_KERNELS), GOMAXPROCS %d\n", nn.Kernels(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "ours: median ms a map over >= %d runs of %d maps; load average (1 min) %s before, %s after ours, %s after the reference\n", o.Reps, Batch, loadBefore, loadOurs, loadAfter)
	tbl := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	tbl.Header("operator", "ours, ms a map (median)", "ours, CPU ms a map", "goal", "PyTorch, this run, ms a map", "README figures (not measured here), ms a map")
	for _, r := range res {
		cpu := "n/a"
		if r.CPU > 0 {
			cpu = fmt.Sprintf("%.3f", r.CPU)
		}
		row := []string{r.Name, fmt.Sprintf("%.3f (min %.3f, %d runs)", r.Median, r.Min, r.Reps), cpu, fmt.Sprintf("%g", r.Goal), refCell(ref, r.Key), readmeFigures[r.Key]}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, refNote)
	if ref != nil {
		fmt.Fprintln(w, "reference: "+ref.EnvLine())
		for _, n := range ref.Notes {
			fmt.Fprintln(w, "reference: "+n)
		}
	}
	return nil
}

// refCell is the reference measured for a case, or why there is none.
func refCell(ref *Reference, key string) string {
	if ref == nil {
		return "not measured"
	}
	torchOcc := func() (float64, string, bool) { return ref.best("occlusion_torch") }
	switch key {
	case "occlusion":
		var parts []string
		if v, k, ok := ref.best("occlusion_captum"); ok {
			parts = append(parts, fmt.Sprintf("Captum %.2f (%s%s)", v, strings.TrimPrefix(k, "occlusion_captum "), ref.cpuNote(k, 1)))
		}
		for _, b := range []string{"64", "582"} {
			k := "occlusion_torch batch " + b
			if v, ok := ref.Measured[k]; ok {
				parts = append(parts, fmt.Sprintf("torch %.2f (batch %s%s)", v, b, ref.cpuNote(k, 1)))
			}
		}
		if len(parts) == 0 {
			return "not measured"
		}
		return strings.Join(parts, "; ")
	case "occlusion_mc":
		if v, k, ok := torchOcc(); ok {
			return fmt.Sprintf("%.1f (%d x torch, %s%s)", Draws*v, Draws, strings.TrimPrefix(k, "occlusion_torch "), ref.cpuNote(k, Draws))
		}
	case "gradcam":
		if v, k, ok := ref.best("gradcam"); ok {
			if c := ref.cpuNote(k, 1); c != "" {
				return fmt.Sprintf("Captum %.3f (%s)", v, strings.TrimPrefix(c, ", "))
			}
			return fmt.Sprintf("Captum %.3f", v)
		}
		return "not measured (needs Captum)"
	case "lime":
		if v, k, ok := ref.best("lime"); ok {
			return fmt.Sprintf("Captum %.2f (%s%s)", v, strings.TrimPrefix(k, "lime "), ref.cpuNote(k, 1))
		}
		return "not measured (needs Captum)"
	}
	return "not measured"
}

// loadAvg is the 1-minute load average, or "n/a".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "n/a"
	}
	return f[0]
}
