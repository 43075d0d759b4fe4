package runner

// SHIM (drop at merge): the contract's Prepare (notes/slurm-contract.md),
// written on the Slurm branch only so that host/slurm and `uaxai slurm`
// build and can be tried before the run units exist here. At the merge
// main's Prepare replaces this file whole. Its unit list is one fit unit
// per posterior and one explain unit per (posterior, explainer) pair; the
// real units (each ensemble member, each block of records) come from main.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
)

// Prepare checks r with its plugins and writes DIR/recipe.toml and DIR/units/plan.json.
// It returns the number of fit and explain units.
func Prepare(ctx context.Context, r *recipe.Recipe, opt Options, dir string) (fit, explain int, err error) {
	if err := Check(ctx, r, opt.Plugins); err != nil {
		return 0, 0, err
	}
	canon, err := r.Canonical()
	if err != nil {
		return 0, 0, err
	}
	type unit struct {
		Name  string `json:"name"`
		Kind  string `json:"kind"`
		Index int    `json:"index"`
	}
	plan := struct {
		Recipe      string `json:"recipe"`
		Fingerprint string `json:"fingerprint"`
		Units       []unit `json:"units"`
	}{Recipe: r.Name, Fingerprint: r.Hash()}
	for p := range r.Posteriors {
		plan.Units = append(plan.Units, unit{fmt.Sprintf("fit-%02d", p), "fit", p})
	}
	for p := range r.Posteriors {
		for e := range r.Explainers {
			plan.Units = append(plan.Units, unit{fmt.Sprintf("explain-%02d-%02d", p, e), "explain", explain})
			explain++
		}
	}
	b, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "units"), 0o755); err != nil {
		return 0, 0, fmt.Errorf("run directory %s: %w", dir, err)
	}
	if err := report.WriteFile(dir, "recipe.toml", canon); err != nil {
		return 0, 0, fmt.Errorf("run directory %s: %w", dir, err)
	}
	if err := report.WriteFile(filepath.Join(dir, "units"), "plan.json", append(b, '\n')); err != nil {
		return 0, 0, fmt.Errorf("run directory %s: %w", dir, err)
	}
	return len(r.Posteriors), explain, nil
}
