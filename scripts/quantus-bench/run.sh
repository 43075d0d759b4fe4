#!/usr/bin/env bash
# Times uaxai evaluate against Quantus 0.6.0 on the same maps, inputs, targets, model and parameters, the two
# sides alternated K times a metric; prints the medians. See README.md next to this file.
#
#   QUANTUS_SRC=/tmp/quantus-0.6.0 scripts/quantus-bench/run.sh            # from the repository's root
#   K=3 N=256 NET=fcn METRICS="region_perturbation infidelity" QUANTUS_SRC=... scripts/quantus-bench/run.sh
#
# Environment: NET (fcn), METHOD (occlusion: the golden maps scored; the robustness metrics re-explain with the
# matching occlusion), N (256 records, tiled from the 8 golden ones), K (5 repetitions), METRICS (the list
# below), QUANTUS_THREADS (2: torch.set_num_threads), GO_WORKERS (2: uaxai --workers), OUT (the work
# directory), PY (/usr/bin/python3: Debian's, with python3-torch), COMPARE_RECORDS (16), OMP_WAIT_POLICY (PASSIVE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/scripts/quantus-bench
NET=${NET:-fcn}
METHOD=${METHOD:-occlusion}
N=${N:-256}
K=${K:-5}
QUANTUS_THREADS=${QUANTUS_THREADS:-2}
GO_WORKERS=${GO_WORKERS:-2}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-/tmp/quantus-bench-$NET-$METHOD-$N}
BIN=${BIN:-/tmp/uaxai-bench}
COMPARE_RECORDS=${COMPARE_RECORDS:-16}
METRICS=${METRICS:-"region_perturbation pixel_flipping selectivity faithfulness_correlation faithfulness_estimate
monotonicity_correlation infidelity max_sensitivity avg_sensitivity local_lipschitz_estimate"}
: "${QUANTUS_SRC:?set QUANTUS_SRC to the Quantus v0.6.0 source tree (the directory holding quantus/)}"
# OMP_WAIT_POLICY=PASSIVE: torch's OpenMP threads sleep instead of spinning while they wait (with the default
# spinning, 2 threads on a 2-core machine shared with other jobs were 10-60x slower on small batches)
export QUANTUS_SRC OMP_NUM_THREADS=$QUANTUS_THREADS OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

mkdir -p "$OUT"
echo "== data: $N records of $NET/$METHOD in $OUT" >&2
"$PY" "$HERE/quantus_bench.py" prepare --net "$NET" --method "$METHOD" --n "$N" --out "$OUT" >&2
echo "== go build -o $BIN ./cmd/uaxai" >&2
(cd "$ROOT" && go build -o "$BIN" ./cmd/uaxai)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

time_go() { # name args...: one uaxai evaluate process on the data with args, timed as a whole into go-<name>.times
	local name=$1 t0 t1
	shift
	t0=$(now)
	if ! (cd "$ROOT" && "$BIN" evaluate --model "recipes/archs/$NET.toml" \
		--weights "testdata/golden/archs/$NET/model.safetensors" \
		--input "$OUT/inputs.csv" --maps "$OUT/maps.csv" --target "$OUT/targets.csv" \
		--workers "$GO_WORKERS" "$@" --out "$OUT/go-$name.csv") 2>"$OUT/go-$name.err"; then
		echo "uaxai evaluate ($name) failed:" >&2
		cat "$OUT/go-$name.err" >&2
		echo nan >>"$OUT/go-$name.times"
		return
	fi
	t1=$(now)
	elapsed "$t0" "$t1" >>"$OUT/go-$name.times"
	echo >>"$OUT/go-$name.times"
}

run_go() { # metric rep: the uaxai evaluate process, timed as a whole
	local m=$1
	mapfile -t args < <("$PY" "$HERE/quantus_bench.py" go-args "$m" --method "$METHOD")
	time_go "$m" "${args[@]}"
}

# run_base: the same process scoring sparseness, which calls no model: its reading, network and writing
run_base() { time_go base --metric sparseness; }

run_py() { # metric rep: quantus_bench.py's in-process seconds, and its process timed as a whole
	local m=$1 r=$2 t0 t1 line
	t0=$(now)
	if ! line=$("$PY" "$HERE/quantus_bench.py" time --data "$OUT" --metric "$m" --threads "$QUANTUS_THREADS" \
		--scores-out "$OUT/quantus-$m.scores" 2>"$OUT/quantus-$m.err"); then
		echo "quantus $m failed:" >&2
		tail -5 "$OUT/quantus-$m.err" >&2
		echo nan >>"$OUT/quantus-$m.times"
		echo nan >>"$OUT/quantus-$m.whole"
		return
	fi
	t1=$(now)
	echo "$line" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' >>"$OUT/quantus-$m.times"
	elapsed "$t0" "$t1" >>"$OUT/quantus-$m.whole"
	echo >>"$OUT/quantus-$m.whole"
}

rm -f "$OUT/go-base.times"
for m in $METRICS; do
	rm -f "$OUT/go-$m.times" "$OUT/quantus-$m.times" "$OUT/quantus-$m.whole"
	for r in $(seq 1 "$K"); do
		# alternate which side goes first, so that neither always runs on a machine the other just warmed
		if ((r % 2)); then run_go "$m" "$r"; run_py "$m" "$r"; run_base; else run_base; run_py "$m" "$r"; run_go "$m" "$r"; fi
		echo "   $m rep $r: go $(tail -n 1 "$OUT/go-$m.times" | tr -d '\n')... quantus $(tail -n 1 "$OUT/quantus-$m.times")" >&2
	done
done

{
	echo "# uaxai evaluate vs Quantus 0.6.0: $NET, $METHOD maps, N=$N, K=$K, torch threads $QUANTUS_THREADS (OMP_WAIT_POLICY=$OMP_WAIT_POLICY), uaxai --workers $GO_WORKERS"
	echo "# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), cpu family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
	base=$(grep -v '^$' "$OUT/go-base.times" | median)
	printf '%-26s %10s %10s %14s %14s %8s %8s %8s\n' metric "go_s" "go_metric" "quantus_in_s" "quantus_whole" ratio ratio_in ratio_wh
	for m in $METRICS; do
		g=$(grep -v '^$' "$OUT/go-$m.times" | median)
		q=$(median <"$OUT/quantus-$m.times")
		w=$(grep -v '^$' "$OUT/quantus-$m.whole" | median)
		awk -v m="$m" -v g="$g" -v b="$base" -v q="$q" -v w="$w" 'BEGIN {
			gm = g - b
			r = (g > 0) ? sprintf("%.1f", q / g) : "nan"; rw = (g > 0) ? sprintf("%.1f", w / g) : "nan"
			ri = (gm > 0) ? sprintf("%.1f", q / gm) : "nan"
			printf "%-26s %10s %10.4f %14s %14s %8s %8s %8s\n", m, g, gm, q, w, r, ri, rw }'
	done
	echo "# go_s: median wall seconds of the whole uaxai evaluate process (reading the files, the network, writing the scores)"
	echo "# go_metric: go_s minus the median $base s of the same process scoring sparseness (no model calls): the metric's own time"
	echo "# quantus_in_s: median seconds of the Quantus metric call alone (after a warm-up call on 8 records);"
	echo "# quantus_whole: the whole python process (imports, reading, warm-up, the call); ratio = quantus_in_s / go_s,"
	echo "# ratio_in = quantus_in_s / go_metric (in-process against in-process), ratio_wh = quantus_whole / go_s"
} | tee "$OUT/table.txt"

echo "== agreement on the same data (the first $COMPARE_RECORDS records)" | tee -a "$OUT/table.txt"
for m in $METRICS; do
	if [[ -s "$OUT/quantus-$m.scores" && -s "$OUT/go-$m.csv" ]]; then
		"$PY" "$HERE/quantus_bench.py" compare --metric "$m" --quantus "$OUT/quantus-$m.scores" \
			--go "$OUT/go-$m.csv" --records "$COMPARE_RECORDS" | tee -a "$OUT/table.txt"
	fi
done
