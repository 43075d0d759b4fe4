package eval

// Band self-coverage (tab:calibration, Proposition prop:orderband): how
// often a held-out explanation draw falls inside the band built from the
// other draws of the same input.

import (
	"fmt"

	"github.com/uaxai/uaxai/sdk/rng"
	"github.com/uaxai/uaxai/sdk/stat"
)

// PartitionPurpose is the purpose string of the random streams of
// PartitionReference: partition p of record i under seed is drawn from
// rng.For(seed, PartitionPurpose, "", i, p).
const PartitionPurpose = "eval.partition"

// Coverage counts the (held-out draw, coordinate) pairs inside the closed
// band [lower, upper]:
//
//	covered = #{(s, n) : lower[n] <= held[s][n] <= upper[n]},  total = len(held) N.
//
// A NaN bound or draw is never covered. Coverage panics if lower, upper
// and the held-out draws differ in length. It allocates nothing.
func Coverage(lower, upper []float64, held [][]float64) (covered, total int) {
	if len(lower) != len(upper) {
		panic(fmt.Sprintf("eval: Coverage: len(lower) = %d, len(upper) = %d", len(lower), len(upper)))
	}
	for s, h := range held {
		if len(h) != len(lower) {
			panic(fmt.Sprintf("eval: Coverage: held draw %d has length %d, want %d", s, len(h), len(lower)))
		}
		for n, v := range h {
			if lower[n] <= v && v <= upper[n] {
				covered++
			}
		}
	}
	return covered, len(held) * len(lower)
}

// checkSplit panics unless draws has at least three members of one
// length, 2 <= nBuild < S and 0 < beta < 1.
func checkSplit(fn string, draws [][]float64, nBuild int, beta float64) {
	if nBuild < 2 || nBuild >= len(draws) {
		panic(fmt.Sprintf("eval: %s: nBuild = %d with %d draws, want 2 <= nBuild < S", fn, nBuild, len(draws)))
	}
	if !(beta > 0 && beta < 1) {
		panic(fmt.Sprintf("eval: %s: beta = %v, want 0 < beta < 1", fn, beta))
	}
	for s, d := range draws {
		if len(d) != len(draws[0]) {
			panic(fmt.Sprintf("eval: %s: draw %d has length %d, want %d", fn, s, len(d), len(draws[0])))
		}
	}
}

// bandBuffers returns lower and upper of length N, allocated when nil.
func bandBuffers(fn string, lower, upper []float64, N int) ([]float64, []float64) {
	if lower == nil {
		lower = make([]float64, N)
	}
	if upper == nil {
		upper = make([]float64, N)
	}
	if len(lower) != N || len(upper) != N {
		panic(fmt.Sprintf("eval: %s: len(lower) = %d, len(upper) = %d, want N = %d", fn, len(lower), len(upper), N))
	}
	return lower, upper
}

// SplitCoverage builds the interpolated band at level beta from the first
// nBuild draws and returns its Coverage of the others:
//
//	lower[n] = Q_{(1-beta)/2}(draws[0..nBuild-1][n]),
//	upper[n] = Q_{(1+beta)/2}(draws[0..nBuild-1][n]),
//	(covered, total) = Coverage(lower, upper, draws[nBuild:]),
//
// Q_p the linear (Hyndman and Fan type 7, numpy.quantile's default)
// sample quantile: the band of the summary.iband plugin
// (stat.InterpolatedBand), bit for bit. lower and upper are nil
// (allocated) or of length N, and hold the band on return.
//
// SplitCoverage panics unless 2 <= nBuild < len(draws), 0 < beta < 1 and
// the draws have one length N.
func SplitCoverage(lower, upper []float64, draws [][]float64, nBuild int, beta float64) (covered, total int) {
	checkSplit("SplitCoverage", draws, nBuild, beta)
	lower, upper = bandBuffers("SplitCoverage", lower, upper, len(draws[0]))
	stat.InterpolatedBand(lower, upper, draws[:nBuild], beta)
	return Coverage(lower, upper, draws[nBuild:])
}

// PartitionReference is the exchangeable reference for SplitCoverage: the
// mean coverage over parts random partitions of the S draws into nBuild
// band draws and S - nBuild held-out draws,
//
//	ref = (1/parts) sum_{p=0}^{parts-1} covered_p / total_p,
//
// covered_p, total_p the SplitCoverage of the draws taken in the order of
// the uniform random permutation pi_p of 0..S-1, pi_p drawn by
// rand.Rand.Perm from the stream rng.For(seed, PartitionPurpose, "",
// record, p). The same (seed, record, p) gives the same partition on
// every run and machine, and partition p does not depend on parts. As
// parts grows, ref tends to the mean over all C(S, nBuild) partitions.
//
// lower and upper are nil (allocated) or of length N; they are scratch.
// PartitionReference panics as SplitCoverage does, and if parts < 1.
func PartitionReference(lower, upper []float64, draws [][]float64, nBuild int, beta float64, parts int, seed uint64, record int) float64 {
	checkSplit("PartitionReference", draws, nBuild, beta)
	if parts < 1 {
		panic(fmt.Sprintf("eval: PartitionReference: parts = %d, want at least 1", parts))
	}
	lower, upper = bandBuffers("PartitionReference", lower, upper, len(draws[0]))
	perm := make([][]float64, len(draws))
	var sum float64
	for p := range parts {
		for i, j := range rng.For(seed, PartitionPurpose, "", record, p).Perm(len(draws)) {
			perm[i] = draws[j]
		}
		c, t := SplitCoverage(lower, upper, perm, nBuild, beta)
		sum += float64(c) / float64(t)
	}
	return sum / float64(parts)
}

// LOOMinMaxCoverage is the leave-one-out self-coverage of the min-max
// band: for every member j, the band [min_{s != j} R_s[n], max_{s != j}
// R_s[n]] of the others, and whether it holds R_j[n],
//
//	covered = #{(j, n) : min_{s != j} R_s[n] <= R_j[n] <= max_{s != j} R_s[n]},  total = S N.
//
// R_j[n] falls outside exactly when it is the strict, unique minimum or
// maximum of the coordinate. For S exchangeable draws without ties
// (continuous), E[covered/total] = (S-2)/S (Proposition prop:orderband:
// the min-max band of S-1 draws, k = 1, l = S-1, covers a new draw with
// probability (l-k)/S), 3/5 for S = 5; with ties it is larger, and 1 when
// all draws are equal. A coordinate with a NaN draw is not covered for
// any j. LOOMinMaxCoverage panics if S < 2 or the draws differ in length.
// It allocates nothing.
func LOOMinMaxCoverage(draws [][]float64) (covered, total int) {
	S := len(draws)
	if S < 2 {
		panic(fmt.Sprintf("eval: LOOMinMaxCoverage: %d draws, want at least 2", S))
	}
	N := len(draws[0])
	for s, d := range draws {
		if len(d) != N {
			panic(fmt.Sprintf("eval: LOOMinMaxCoverage: draw %d has length %d, want %d", s, len(d), N))
		}
	}
	for n := range N {
		lo, hi := draws[0][n], draws[0][n]
		nlo, nhi := 0, 0
		nan := false
		for _, d := range draws {
			v := d[n]
			if v != v {
				nan = true
			}
			if v < lo {
				lo, nlo = v, 1
			} else if v == lo {
				nlo++
			}
			if v > hi {
				hi, nhi = v, 1
			} else if v == hi {
				nhi++
			}
		}
		if nan {
			continue
		}
		// Every member but a unique minimum and a unique maximum. Unless
		// all are equal (then nlo = nhi = S), lo < hi, so these are two
		// different members.
		c := S
		if nlo == 1 {
			c--
		}
		if nhi == 1 {
			c--
		}
		covered += c
	}
	return covered, S * N
}
