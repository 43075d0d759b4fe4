// Package testdep is the one way a test skips for a missing outside
// dependency (Debian's python3 with the kit's modules, PyTorch, Chromium,
// a Slurm cluster): Skip skips the test, saying what is missing, unless
// the dependency is listed in $UAXAI_REQUIRE, where it fails the test
// instead. .ci/run sets UAXAI_REQUIRE=python,torch,chromium,slurm (as
// root, where it installs them), so that CI cannot go green by skipping
// the tests it was meant to run.
package testdep
