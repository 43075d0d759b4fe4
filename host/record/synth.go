package record

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"time"
)

// The shipped demonstration recording (testdata/recordings): 1 s of a
// 50 Hz, 230 V RMS phase voltage sampled at 20 kHz, with two sags.
const (
	SynthRate    = 20000
	SynthSamples = 20000
	SynthFreq    = 50
	SynthNominal = 230 // V RMS
	SynthSeed    = 1
)

// Sag is a rectangular sag: the amplitude is Depth (p.u.) for
// Start <= t < End seconds.
type Sag struct{ Start, End, Depth float64 }

// SynthSags are the demonstration recording's sags: 0.6 p.u. for 4
// cycles from 0.2 s, and 0.4 p.u. for 3 cycles from 0.6 s.
var SynthSags = []Sag{{0.2, 0.28, 0.6}, {0.6, 0.66, 0.4}}

// Synthesize returns the demonstration signal, in volts:
//
//	v[n] = sqrt(2) * 230 * a(t) * (sin(w t) + 0.03 sin(3 w t + 0.4) + 0.02 sin(5 w t - 1.1)) + e[n]
//
// t = n / 20000 s, w = 2 pi 50, a(t) the sag depth inside a sag and 1
// elsewhere, e[n] ~ N(0, 0.5^2) V from a PCG stream of seed (math/rand/v2).
func Synthesize(seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0x5245434f5244)) // "RECORD"
	x := make([]float64, SynthSamples)
	w := 2 * math.Pi * SynthFreq
	for n := range x {
		t := float64(n) / SynthRate
		a := 1.0
		for _, s := range SynthSags {
			if t >= s.Start && t < s.End {
				a = s.Depth
			}
		}
		h := math.Sin(w*t) + 0.03*math.Sin(3*w*t+0.4) + 0.02*math.Sin(5*w*t-1.1)
		x[n] = math.Sqrt2*SynthNominal*a*h + 0.5*rng.NormFloat64()
	}
	return x
}

// demoCOMTRADE returns the demonstration recording as a COMTRADE value.
func demoCOMTRADE(x []float64, rev int, ft string, a float64) *COMTRADE {
	start := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	return &COMTRADE{Rev: rev, FileType: ft, Station: "uaxai demo", Device: "record.Synthesize", LineFreq: SynthFreq,
		Segments: []Segment{{Start: 0, End: len(x), Rate: SynthRate}},
		Start:    start, Trigger: start.Add(200 * time.Millisecond), CRLF: true,
		Analogs: []Channel{{ID: "VA", Phase: "A", Unit: "V", A: a, Primary: SynthNominal, Secondary: SynthNominal, PS: "P", Samples: x}},
		INF:     "[Public Record_Information]\nsource=uaxai record.Synthesize seed " + strconv.Itoa(SynthSeed) + "\nnominal=" + strconv.Itoa(SynthNominal) + "\n",
	}
}

// DemoFiles returns the demonstration recording's files by name:
// demo.cfg and demo.dat (COMTRADE 1999 ASCII, a = 0.01 V), demo.cff
// (COMTRADE 2013 BINARY32, a = 0.001 V, INF nominal=230), demo.wav (PCM
// 16-bit, full scale 400 V) and demo.csv (time,value with the value in V
// to 0.01 V).
func DemoFiles() (map[string][]byte, error) {
	x := Synthesize(SynthSeed)
	files := map[string][]byte{}
	cfg, dat, err := demoCOMTRADE(x, 1999, ASCII, 0.01).Encode()
	if err != nil {
		return nil, err
	}
	files["demo.cfg"], files["demo.dat"] = cfg, dat
	if files["demo.cff"], err = demoCOMTRADE(x, 2013, Binary32, 0.001).EncodeCFF(); err != nil {
		return nil, err
	}
	if files["demo.wav"], err = EncodeWAV(x, SynthRate, 16, 400); err != nil {
		return nil, err
	}
	b := []byte("time,VA\n")
	for n, v := range x {
		b = strconv.AppendFloat(b, float64(n)/SynthRate, 'g', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'f', 2, 64)
		b = append(b, '\n')
	}
	files["demo.csv"] = b
	return files, nil
}

// WriteDemo writes DemoFiles into dir.
func WriteDemo(dir string) error {
	files, err := DemoFiles()
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := writeBytes(filepath.Join(dir, name), b); err != nil {
			return fmt.Errorf("record: demo: %w", err)
		}
	}
	return nil
}

// The three-phase test recording (testdata/recordings/three-phase.cfg and
// .dat): 0.6 s of 50 Hz phase voltages of 230 V RMS at 6400 Hz, with a
// sag on phase B, and a current; the cfg lists its channels out of phase
// order (VB, IA, VC, VA, then a digital TRIP), so that choosing by phase
// is tested against the order of the file.
const (
	ThreeRate     = 6400
	ThreeSamples  = 3840
	ThreeCurrent  = 80  // A RMS of the current IA
	ThreeIRating  = 100 // A: IA's primary rating (its nominal)
	ThreeSagDepth = 0.5 // p.u., phase B, ThreeSagStart <= t < ThreeSagEnd
	ThreeSagStart = 0.25
	ThreeSagEnd   = 0.35
)

// ThreePhase returns the three-phase test recording's phase voltages and
// current at sample n, in volts and amperes:
//
//	v_p[n] = sqrt(2) * 230 * a_p(t) * sin(w t - 2 pi p / 3),  p = 0, 1, 2 (A, B, C)
//	i[n]   = sqrt(2) * 80 * sin(w t - 0.5)
//
// t = n / 6400 s, w = 2 pi 50, a_B(t) = 0.5 for 0.25 <= t < 0.35 s and
// a_p(t) = 1 otherwise. There is no noise.
func ThreePhase(n int) (v [3]float64, i float64) {
	t := float64(n) / ThreeRate
	w := 2 * math.Pi * SynthFreq
	for p := range v {
		a := 1.0
		if p == 1 && t >= ThreeSagStart && t < ThreeSagEnd {
			a = ThreeSagDepth
		}
		v[p] = math.Sqrt2 * SynthNominal * a * math.Sin(w*t-2*math.Pi*float64(p)/3)
	}
	return v, math.Sqrt2 * ThreeCurrent * math.Sin(w*t-0.5)
}

// ThreePhaseFiles returns three-phase.cfg and three-phase.dat: ThreePhase
// as COMTRADE 1999 ASCII with CR LF, a = 0.01 V and 0.01 A, voltage
// channels of primary rating 230 V (phase-to-neutral) and the current of
// 100 A, all PS = P; the analog channels in the order VB, IA, VC, VA and a
// digital channel TRIP (1 during the sag).
func ThreePhaseFiles() (map[string][]byte, error) {
	var v [3][]float64
	cur := make([]float64, ThreeSamples)
	trip := make([]bool, ThreeSamples)
	for p := range v {
		v[p] = make([]float64, ThreeSamples)
	}
	for n := range ThreeSamples {
		vn, in := ThreePhase(n)
		for p := range v {
			v[p][n] = vn[p]
		}
		cur[n] = in
		t := float64(n) / ThreeRate
		trip[n] = t >= ThreeSagStart && t < ThreeSagEnd
	}
	start := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	volt := func(id, ph string, x []float64) Channel {
		return Channel{ID: id, Phase: ph, Unit: "V", A: 0.01, Primary: SynthNominal, Secondary: SynthNominal, PS: "P", Samples: x}
	}
	w := &COMTRADE{Rev: 1999, FileType: ASCII, Station: "uaxai three-phase test", Device: "record.ThreePhase", LineFreq: SynthFreq,
		Segments: []Segment{{Start: 0, End: ThreeSamples, Rate: ThreeRate}},
		Start:    start, Trigger: start.Add(250 * time.Millisecond), CRLF: true,
		Analogs: []Channel{
			volt("VB", "B", v[1]),
			{ID: "IA", Phase: "A", Unit: "A", A: 0.01, Primary: ThreeIRating, Secondary: 1, PS: "P", Samples: cur},
			volt("VC", "C", v[2]),
			volt("VA", "A", v[0]),
		},
		Digitals: []DigitalChannel{{ID: "TRIP", States: trip}},
	}
	cfg, dat, err := w.Encode()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"three-phase.cfg": cfg, "three-phase.dat": dat}, nil
}
