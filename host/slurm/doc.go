// Package slurm runs a uaxai run directory on a Slurm cluster with Slurm's
// own means: one array job of the fit units, one array job of the explain
// shards held back with --dependency=afterok, and one merge job after them.
// It never schedules anything itself.
//
// The run directory (layout in notes of the run units: DIR/recipe.toml,
// DIR/units/plan.json, DIR/units/<name>.unit and .lock, DIR/shards/) is
// prepared by runner.Prepare; this package writes DIR/slurm/ (the sbatch
// scripts fit.sbatch, explain.sbatch, merge.sbatch, the jobs' output files
// %x-%A_%a.out, and jobs.json, the record of every submission), and DIR/bin/
// uaxai, the binary the jobs run.
//
//   - Submit writes the scripts and submits the three jobs (or, dry, prints
//     the sbatch lines).
//   - Status reads the run directory and asks squeue and scontrol (sacct
//     is not needed) for the state of every array task.
//   - Resume resubmits only the array tasks whose units are missing and
//     that are neither running nor pending, then a new merge job.
//   - Wait waits for the merge job to end.
//
// Every call to Slurm goes through the Cluster interface; CLI runs the
// commands sbatch, squeue, scontrol and scancel.
//
// # Tests
//
//   - Slurm: host/slurm (scripts run by bash, a fake cluster, parsers on
//     real Slurm 22.05 output; TestRealSlurm) and
//     cmd/uaxai/slurm_real_test.go TestSlurmQuickstart (the quickstart
//     through uaxai slurm submit on the single-node Slurm that .ci/run
//     starts with scripts/slurm-local, the same bytes as uaxai run); both
//     skip, saying why, where no Slurm answers.
package slurm
