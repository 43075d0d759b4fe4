package record

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// sineRec is n samples at rate Hz of a sine of f Hz and RMS value rms
// (amp(t) scales it: a sag), with its EstFreq as finish would set it.
func sineRec(n int, rate, f, rms float64, stated float64, amp func(t float64) float64) *Recording {
	x := make([]float64, n)
	for i := range x {
		t := float64(i) / rate
		x[i] = math.Sqrt2 * rms * amp(t) * math.Sin(2*math.Pi*f*t+0.2)
	}
	r := &Recording{Path: "s.cfg", Channel: "VA", Unit: "V", Samples: x, Segments: []Segment{{Start: 0, End: n, Rate: rate}}, LineFreq: stated}
	r.EstFreq = EstimateFrequency(r)
	return r
}

func flat(float64) float64 { return 1 }

// TestSystemFrequencyWindows: without a rate, a window of 640 samples
// holds 10 cycles of the system's frequency: a 60 Hz recording is
// resampled to 3840 Hz (a window is then 10 of its cycles: the closed
// form, sample for sample, within the filter's ripple), a 50 Hz one to
// 3200 Hz; a file that states 50 Hz for a 60 Hz signal is read as 60 Hz
// and said; a rate given that breaks the 10 cycles is said.
func TestSystemFrequencyWindows(t *testing.T) {
	for _, c := range []struct {
		f, stated, want float64
		warn            string
	}{
		{60, 60, 3840, "a 60 Hz system (the samples' zero crossings give 60 Hz): resampled to 3840 Hz"},
		{50, 50, 3200, ""},
		{60, 50, 3840, "and the file states 50 Hz"},
		{50, 0, 3200, ""},
	} {
		rec := sineRec(20000, 20000, c.f, 230, c.stated, flat)
		imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 230})
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(imp.Warnings, "\n")
		if imp.Rate != c.want || (c.warn == "") != (all == "") || !strings.Contains(all, c.warn) {
			t.Errorf("%g Hz stated %g: rate %g (want %g), warnings %q (want %q)", c.f, c.stated, imp.Rate, c.want, all, c.warn)
		}
		// A window is 10 cycles: sample j is sin(2 pi f j/rate + phase).
		w := imp.Kept()[1]
		worst := 0.0
		for j := 50; j < len(w)-50; j++ {
			tt := float64(imp.Windows[1].Start+j) / imp.Rate
			worst = max(worst, math.Abs(w[j]-math.Sin(2*math.Pi*c.f*tt+0.2)))
		}
		if worst > 2e-3 {
			t.Errorf("%g Hz: window 1 differs from the closed form by %g", c.f, worst)
		}
	}
	rec := sineRec(20000, 20000, 60, 230, 60, flat)
	imp, err := Import(context.Background(), rec, ImportOptions{Nominal: 230, Rate: 3200})
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(imp.Warnings, "\n"); !strings.Contains(all, "holds 12 cycles, not 10 (the rate was given; leave it out to take 3840 Hz)") {
		t.Errorf("a given rate breaking the cycles: %q", all)
	}
}

// TestNominalAuto: --nominal auto is the median cycle RMS before the
// trigger (a sine of 231 V RMS, a 0.5 pu sag after 0.1 s): 231 V within
// 0.1 %; without a trigger, of the first 5 cycles; with a nominal given
// too, an error.
func TestNominalAuto(t *testing.T) {
	sag := func(t float64) float64 {
		if t > 0.1 && t < 0.3 {
			return 0.5
		}
		return 1
	}
	rec := sineRec(10000, 10000, 50, 231, 50, sag)
	rec.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rec.Trigger = rec.Start.Add(120 * time.Millisecond) // the sag began 20 ms before it: the median ignores one cycle
	imp, err := Import(context.Background(), rec, ImportOptions{NominalAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(imp.Nominal-231) > 0.231 || !strings.Contains(imp.NominalSource, "cycles before the trigger") {
		t.Errorf("nominal %g (%s), want 231 before the trigger", imp.Nominal, imp.NominalSource)
	}
	rec.Trigger = time.Time{}
	imp, err = Import(context.Background(), rec, ImportOptions{NominalAuto: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(imp.Nominal-231) > 0.231 || !strings.Contains(imp.NominalSource, "of the first 5 cycles") {
		t.Errorf("nominal %g (%s), want 231 of the first cycles", imp.Nominal, imp.NominalSource)
	}
	if _, err := Import(context.Background(), rec, ImportOptions{NominalAuto: true, Nominal: 230}); err == nil {
		t.Error("auto with a nominal given: no error")
	}
}

// TestLineToLineRating: a rating from the file that is the line-to-line
// value of a phase-to-neutral channel (400 V for a 230.9 V RMS signal) is
// divided by sqrt(3) and said; a phase-to-neutral rating (230 V) is
// taken as it is, silently.
func TestLineToLineRating(t *testing.T) {
	for _, c := range []struct {
		rating, want float64
		said         bool
	}{{400, 400 / math.Sqrt(3), true}, {230, 230, false}} {
		rec := sineRec(10000, 10000, 50, 230.9, 50, flat)
		rec.Nominal, rec.NominalSource = c.rating, "primary rating of channel 1 in the cfg"
		imp, err := Import(context.Background(), rec, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(strings.Join(imp.Warnings, "\n"), "is a line-to-line value")
		if math.Abs(imp.Nominal-c.want) > 1e-9 || said != c.said {
			t.Errorf("rating %g: nominal %g (%s), said %v; want %g, %v", c.rating, imp.Nominal, imp.NominalSource, said, c.want, c.said)
		}
	}
}

// TestRatingDisagrees: a rating from the file that the signal contradicts
// (a transformer ratio written as a rating: 1 V for a 58.6 V signal, 1100
// kV for 47.2 kV, as two field recorders write) gives way to the
// pre-event RMS, said with both values; a rating within RatingFactor of
// the signal (1.5 to 2.04 times it is the line-to-line case), a
// recording that is an interruption after its first cycles (the median
// of all cycles is low, the pre-event RMS is not), one whose first 0.3 s
// are the event (the reverse), and one whose pre-event RMS is above the
// rating and median below it keep the rating.
func TestRatingDisagrees(t *testing.T) {
	outage := func(from float64) func(float64) float64 {
		return func(t float64) float64 {
			if t >= from {
				return 0.01
			}
			return 1
		}
	}
	for _, c := range []struct {
		name        string
		rms, rating float64
		amp         func(float64) float64
		taken       bool
	}{
		{"ratio 100:1", 58.6, 1, flat, true},
		{"ratio 1100:1 in kV", 47.2, 1100, flat, true},
		{"rating 1.4 times the signal", 164.3, 230, flat, false},
		{"signal 1.9 times the rating", 437, 230, flat, false},
		{"an interruption after 5 cycles", 230, 230, outage(0.1), false},
		{"an interruption in the first 0.3 s, normal voltage after", 230, 230, func(t float64) float64 { return 1.01 - outage(0.3)(t) }, false},
		{"the pre-event above, the whole recording below the rating", 500, 230, outage(0.1), false},
	} {
		rec := sineRec(10000, 10000, 50, c.rms, 50, c.amp)
		rec.Nominal, rec.NominalSource = c.rating, "primary rating of channel 1 in the cfg"
		imp, err := Import(context.Background(), rec, ImportOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		said := strings.Contains(strings.Join(imp.Warnings, "\n"), "disagrees with the signal")
		want := c.rating
		if c.taken {
			pre, _, err := PreEventRMS(rec, 50)
			if err != nil {
				t.Fatal(err)
			}
			want = pre
			if math.Abs(pre-c.rms) > 1e-3*c.rms {
				t.Fatalf("%s: pre-event RMS %g of a %g RMS sine", c.name, pre, c.rms)
			}
		}
		if imp.Nominal != want || said != c.taken {
			t.Errorf("%s: nominal %g (%s), said %v; want %g, %v\n%s", c.name, imp.Nominal, imp.NominalSource, said, want, c.taken, strings.Join(imp.Warnings, "\n"))
		}
	}
}
