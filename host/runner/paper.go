package runner

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/paperreport"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
)

// Paper runs every recipe of dir, one after the other, each in its own
// run directory under out/paper-<time>/, and writes REPORT.md there: the
// machine, the wall time of each part, and each recipe's tables (ours
// beside the paper's) and figures. The recipes share trained posteriors
// through opt.Cache. A recipe that fails is reported and the others still
// run; Paper then returns an error naming the failures. A recipe's
// Options.Out is replaced.
func Paper(ctx context.Context, dir, out string, opt Options, log io.Writer) (*paperreport.Outcome, error) {
	files, err := paperreport.Recipes(dir)
	if err != nil {
		return nil, err
	}
	var recipes []*recipe.Recipe
	for _, f := range files {
		r, err := recipe.Load(f)
		if err != nil {
			return nil, err
		}
		recipes = append(recipes, r)
	}
	start := time.Now()
	root, err := report.NewRunDir(out, "paper", start)
	if err != nil {
		return nil, fmt.Errorf("paper: %w", err)
	}
	po := &paperreport.Outcome{Dir: root}
	var failed []string
	for i, r := range recipes {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(log, "paper: [%d/%d] %s (%s)\n", i+1, len(recipes), r.Name, files[i])
		t0 := time.Now()
		o := opt
		o.Out = root
		oc, err := Run(ctx, r, o)
		part := paperreport.Part{Recipe: files[i], Name: r.Name, Wall: time.Since(t0), Err: err}
		if oc != nil {
			part.Dir = oc.Dir
		} else if err == nil {
			part.Err = fmt.Errorf("no outcome")
		}
		if part.Err != nil {
			failed = append(failed, r.Name)
			fmt.Fprintf(log, "paper: %s failed after %s: %v\n", r.Name, paperreport.RoundDur(part.Wall), part.Err)
		} else {
			fmt.Fprintf(log, "paper: %s done in %s\n", r.Name, paperreport.RoundDur(part.Wall))
		}
		po.Parts = append(po.Parts, part)
		// The report is rewritten after each part, so that an interrupted
		// or failed run keeps what it has.
		if err := paperreport.Write(po, files, time.Since(start), ctx.Err() != nil || i < len(recipes)-1); err != nil {
			return po, err
		}
	}
	if ctx.Err() != nil {
		return po, fmt.Errorf("paper: interrupted (report so far: %s): %w", filepath.Join(root, "REPORT.md"), ctx.Err())
	}
	if len(failed) > 0 {
		return po, fmt.Errorf("paper: %d of %d recipes failed (%s); report: %s", len(failed), len(recipes), strings.Join(failed, ", "), filepath.Join(root, "REPORT.md"))
	}
	return po, nil
}
