package eval

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPredictiveClosedForms(t *testing.T) {
	// A correct one-hot predictor: every measure 0, accuracy 1.
	labels := []int{2, 0, 1, 2}
	probs := make([]float64, len(labels)*3)
	for i, y := range labels {
		probs[i*3+y] = 1
	}
	q, err := Predictive(probs, 3, labels)
	if err != nil {
		t.Fatal(err)
	}
	if q != (PredictiveQuality{N: 4, Accuracy: 1}) {
		t.Errorf("one-hot correct: %+v", q)
	}

	// Uniform: NLL = entropy = log C, Brier = 1 - 1/C; the prediction is
	// class 0 (lowest index among ties), so with labels 0 the accuracy is
	// 1 and ECE = 1 - 1/C.
	for _, C := range []int{2, 3, 16} {
		n := 5
		probs := make([]float64, n*C)
		for j := range probs {
			probs[j] = 1 / float64(C)
		}
		q, err := Predictive(probs, C, make([]int, n))
		if err != nil {
			t.Fatal(err)
		}
		lc := math.Log(float64(C))
		if math.Abs(q.NLL-lc) > 1e-15 || math.Abs(q.Entropy-lc) > 1e-14 || math.Abs(q.Brier-(1-1/float64(C))) > 1e-15 ||
			q.Accuracy != 1 || math.Abs(q.ECE-(1-1/float64(C))) > 1e-15 {
			t.Errorf("uniform C = %d: %+v; want NLL = entropy = %v, Brier %v", C, q, lc, 1-1/float64(C))
		}
	}

	// A confidently wrong one-hot predictor: p = 0 for the true class,
	// NLL clamped to -log(ProbFloor), Brier 2, ECE 1.
	q, err = Predictive([]float64{0, 1, 1, 0}, 2, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if q.NLL != -math.Log(ProbFloor) || q.Brier != 2 || q.ECE != 1 || q.Accuracy != 0 || q.Entropy != 0 {
		t.Errorf("wrong one-hot: %+v; want NLL %v, Brier 2, ECE 1", q, -math.Log(ProbFloor))
	}

	// ECE by hand, 3 bins populated (bin b holds (b/15, (b+1)/15]):
	// conf 0.9, correct, bin 13: |1 - 0.9| = 0.1;
	// conf 0.95, wrong, bin 14: |0 - 0.95| = 0.95;
	// conf 0.7 wrong and 0.7 correct, bin 10: |0.5 - 0.7| = 0.2;
	// ECE = 1/4 0.1 + 1/4 0.95 + 2/4 0.2 = 0.3625.
	probs = []float64{0.9, 0.1, 0.95, 0.05, 0.7, 0.3, 0.3, 0.7}
	labels = []int{0, 1, 1, 1}
	q, err = Predictive(probs, 2, labels)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(q.ECE-0.3625) > 1e-15 || q.Accuracy != 0.5 {
		t.Errorf("hand ECE: %+v, want ECE 0.3625, accuracy 0.5", q)
	}
	// The other measures of that example, by hand.
	nll := -(math.Log(0.9) + math.Log(0.05) + math.Log(0.3) + math.Log(0.7)) / 4
	brier := (2*0.1*0.1 + 2*0.95*0.95 + 2*0.7*0.7 + 2*0.3*0.3) / 4
	h := func(p float64) float64 { return -p*math.Log(p) - (1-p)*math.Log(1-p) }
	ent := (h(0.9) + h(0.95) + h(0.7) + h(0.3)) / 4
	if math.Abs(q.NLL-nll) > 1e-15 || math.Abs(q.Brier-brier) > 1e-15 || math.Abs(q.Entropy-ent) > 1e-15 {
		t.Errorf("hand example: %+v; want NLL %v Brier %v entropy %v", q, nll, brier, ent)
	}
}

// eceRef is the ECE of Guo et al.'s reference code: for each bin
// (lo, hi] of numpy.linspace(0, 1, 16), the records with lo < conf <= hi.
func eceRef(conf []float64, correct []bool) float64 {
	var ece float64
	for b := range 15 {
		lo, hi := float64(b)*(1.0/15), float64(b+1)*(1.0/15)
		if b == 14 {
			hi = 1
		}
		var n, ok int
		var cs float64
		for i, c := range conf {
			if c > lo && c <= hi {
				n++
				cs += c
				if correct[i] {
					ok++
				}
			}
		}
		if n > 0 {
			ece += float64(n) / float64(len(conf)) * math.Abs(float64(ok)/float64(n)-cs/float64(n))
		}
	}
	return ece
}

// TestPredictiveRandom: random probability rows against the reference
// ECE and the expanded Brier form 1 - 2 p_y + sum_c p_c^2.
func TestPredictiveRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for trial := range 100 {
		C, n := 2+r.IntN(15), 1+r.IntN(200)
		probs := make([]float64, n*C)
		labels := make([]int, n)
		conf := make([]float64, n)
		correct := make([]bool, n)
		var brier float64
		for i := range n {
			row := probs[i*C : (i+1)*C]
			var sum float64
			for c := range row {
				row[c] = math.Pow(r.Float64(), float64(1+trial%6)*2)
				if trial%7 == 0 {
					row[c] = float64(r.IntN(3)) // ties for the argmax
				}
				sum += row[c]
			}
			if sum == 0 {
				row[0], sum = 1, 1
			}
			best := 0
			for c := range row {
				row[c] /= sum
				if row[c] > row[best] {
					best = c
				}
			}
			labels[i] = r.IntN(C)
			conf[i], correct[i] = row[best], best == labels[i]
			ss := 0.0
			for _, p := range row {
				ss += p * p
			}
			brier += 1 - 2*row[labels[i]] + ss
		}
		q, err := Predictive(probs, C, labels)
		if err != nil {
			t.Fatal(err)
		}
		if w := eceRef(conf, correct); math.Abs(q.ECE-w) > 1e-14 {
			t.Errorf("trial %d: ECE %v, reference %v", trial, q.ECE, w)
		}
		if w := brier / float64(n); math.Abs(q.Brier-w) > 1e-14 {
			t.Errorf("trial %d: Brier %v, expanded form %v", trial, q.Brier, w)
		}
		k := 0
		for _, ok := range correct {
			if ok {
				k++
			}
		}
		if q.Accuracy != float64(k)/float64(n) || q.N != n {
			t.Errorf("trial %d: accuracy %v over %d, want %v", trial, q.Accuracy, q.N, float64(k)/float64(n))
		}
		if q.Entropy < 0 || q.Entropy > math.Log(float64(C))+1e-12 || q.NLL < 0 || q.ECE < 0 || q.ECE > 1 {
			t.Errorf("trial %d: out of range: %+v", trial, q)
		}
	}
}

// TestECEBinEdges: a confidence on an edge e_b belongs to the bin below,
// the next float64 above it to bin b; above 1 to the last bin.
func TestECEBinEdges(t *testing.T) {
	for b := 1; b <= 15; b++ {
		e := eceEdge(b)
		if got := eceBin(e); got != b-1 {
			t.Errorf("eceBin(e_%d = %v) = %d, want %d", b, e, got, b-1)
		}
		if b < 15 {
			if got := eceBin(math.Nextafter(e, 2)); got != b {
				t.Errorf("eceBin(just above e_%d) = %d, want %d", b, got, b)
			}
		}
		// numpy.linspace(0, 1, 16)[b] = b * (1/15), and 1 at the end.
		if want := float64(b) * (1.0 / 15); b < 15 && e != want || b == 15 && e != 1 {
			t.Errorf("e_%d = %v", b, e)
		}
	}
	for _, c := range []struct {
		conf float64
		bin  int
	}{{0, 0}, {math.SmallestNonzeroFloat64, 0}, {1, 14}, {1 + 1e-5, 14}, {0.5, 7}, {-1, 0}} {
		if got := eceBin(c.conf); got != c.bin {
			t.Errorf("eceBin(%v) = %d, want %d", c.conf, got, c.bin)
		}
	}
}

func TestPredictiveErrors(t *testing.T) {
	good := []float64{0.5, 0.5, 0.2, 0.8}
	for _, c := range []struct {
		name   string
		probs  []float64
		labels []int
		want   []string
	}{
		{"no records", nil, nil, []string{"no records"}},
		{"label", good, []int{0, 2}, []string{"record 1", "label 2", "0 <= label < 2"}},
		{"negative label", good, []int{-1, 0}, []string{"record 0", "label -1"}},
		{"negative", []float64{0.5, 0.5, 1.2, -0.2}, []int{0, 0}, []string{"record 1", "class 1", "-0.2"}},
		{"NaN", []float64{math.NaN(), 1, 0.5, 0.5}, []int{0, 0}, []string{"record 0", "class 0", "NaN"}},
		{"Inf", []float64{0.5, 0.5, math.Inf(1), 0}, []int{0, 0}, []string{"record 1", "+Inf"}},
		{"sum", []float64{0.5, 0.5, 0.5, 0.50011}, []int{0, 0}, []string{"record 1", "sum to 1.00011", "within 0.0001"}},
		{"sum low", []float64{0.5, 0.4, 0.5, 0.5}, []int{0, 0}, []string{"record 0", "sum to 0.9"}},
	} {
		_, err := Predictive(c.probs, 2, c.labels)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	// Within the tolerance: accepted.
	if _, err := Predictive([]float64{0.5, 0.50009, 0.49991, 0.5}, 2, []int{0, 1}); err != nil {
		t.Errorf("sums within 1e-4: %v", err)
	}
	// One class: every row is (1), a certain and correct prediction.
	if q, err := Predictive([]float64{1, 1, 1}, 1, []int{0, 0, 0}); err != nil || q != (PredictiveQuality{N: 3, Accuracy: 1}) {
		t.Errorf("one class: %+v, %v", q, err)
	}
	expectPanic(t, "classes 0", func() { Predictive(nil, 0, nil) })
	expectPanic(t, "lengths", func() { Predictive(good, 2, []int{0}) })
}

func TestMeanProbs(t *testing.T) {
	got := MeanProbs(nil, [][]float64{{1, 0, 0.5, 0.5}, {0, 1, 0.25, 0.75}})
	want := []float64{0.5, 0.5, 0.375, 0.625}
	for j := range want {
		if got[j] != want[j] {
			t.Errorf("MeanProbs = %v, want %v", got, want)
			break
		}
	}
	dst := make([]float64, 2)
	if out := MeanProbs(dst, [][]float64{{0.3, 0.7}}); &out[0] != &dst[0] || out[0] != 0.3 {
		t.Errorf("dst not used: %v", out)
	}
	expectPanic(t, "no draws", func() { MeanProbs(nil, nil) })
	expectPanic(t, "ragged", func() { MeanProbs(nil, [][]float64{{1, 0}, {1}}) })
	expectPanic(t, "dst", func() { MeanProbs(make([]float64, 3), [][]float64{{1, 0}}) })
}
