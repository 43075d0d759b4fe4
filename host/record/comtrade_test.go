package record

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testWriter returns a COMTRADE of two analog channels (the second with
// missing values) and 17 digital channels (two status words), at the
// given segments.
func testWriter(rev int, ft string, segs []Segment, timestamped bool) *COMTRADE {
	n := segs[len(segs)-1].End
	rng := rand.New(rand.NewPCG(7, uint64(rev)))
	v1, v2 := make([]float64, n), make([]float64, n)
	for i := range v1 {
		v1[i] = 300 * math.Sin(float64(i)/7)
		v2[i] = 20*rng.NormFloat64() + 5
		if i%37 == 3 || (i >= 50 && i < 53) {
			v2[i] = math.NaN()
		}
	}
	a := 0.05
	if ft == Binary {
		a = 0.02
	}
	var digs []DigitalChannel
	for k := 0; k < 17; k++ {
		st := make([]bool, n)
		for i := range st {
			st[i] = (i+k)%3 == 0
		}
		digs = append(digs, DigitalChannel{ID: fmt.Sprintf("D%d", k+1), Normal: k % 2, States: st})
	}
	start := time.Date(2013, 4, 5, 6, 7, 8, 123456000, time.UTC)
	return &COMTRADE{Rev: rev, FileType: ft, Station: "Station X", Device: "rel1", LineFreq: 60,
		Segments: segs, Timestamped: timestamped, Start: start, Trigger: start.Add(time.Millisecond), TimeMult: 1,
		Analogs: []Channel{
			{ID: "IA", Phase: "A", Unit: "A", A: a, B: 0.5, Primary: 1200, Secondary: 5, PS: "S", Samples: v1},
			{ID: "VB", Phase: "B", Unit: "kV", A: a / 4, B: -1, Primary: 1, Secondary: 1, PS: "P", Samples: v2},
		},
		Digitals: digs,
		INF:      "[Public]\nnominal = 66\n",
	}
}

// stored returns what a file of type ft stores for v (a*x+b with x
// rounded or a float32).
func stored(ft string, a, b, v float64) float64 {
	if math.IsNaN(v) {
		return v
	}
	if ft == Float32 {
		return a*float64(float32((v-b)/a)) + b
	}
	return a*math.Round((v-b)/a) + b
}

// TestRoundTrip writes every revision x file type (and the 2013 .cff) and
// reads each channel back: the values a*x+b of what was stored, the
// missing values as gaps, the rates, the dates.
func TestRoundTrip(t *testing.T) {
	segs := []Segment{{Start: 0, End: 120, Rate: 4000}, {Start: 120, End: 300, Rate: 1000}}
	for _, rev := range []int{1991, 1999, 2013} {
		for _, ft := range []string{ASCII, Binary, Binary32, Float32} {
			for _, cff := range []bool{false, true} {
				if cff && rev != 2013 {
					continue
				}
				name := fmt.Sprintf("%d-%s-cff=%v", rev, ft, cff)
				t.Run(name, func(t *testing.T) {
					w := testWriter(rev, ft, segs, false)
					dir := t.TempDir()
					path := filepath.Join(dir, "r.cfg")
					if cff {
						path = filepath.Join(dir, "r.cff")
						b, err := w.EncodeCFF()
						if err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(path, b, 0o644); err != nil {
							t.Fatal(err)
						}
					} else if err := w.WriteFiles(path); err != nil {
						t.Fatal(err)
					}
					for k, ch := range w.Analogs {
						for _, sel := range []string{ch.ID, fmt.Sprint(k + 1), strings.ToLower(ch.ID), fmt.Sprint("A", k+1), fmt.Sprint("a", k+1)} {
							rec, err := Read(path, Options{Channel: sel})
							if err != nil {
								t.Fatal(err)
							}
							checkChannel(t, rec, w, k, ft)
						}
					}
					// No channel asked: the first voltage channel, said.
					def, err := Read(path, Options{})
					if err != nil {
						t.Fatal(err)
					}
					if def.Channel != "VB" || def.Unit != "kV" {
						t.Errorf("default channel %q %q, want the first voltage channel VB (kV)", def.Channel, def.Unit)
					}
					wantWarn(t, def, `no channel asked: took A2 "VB", the first voltage channel (unit kV)`)
					rec, err := Read(path, Options{Channel: "IA"})
					if err != nil {
						t.Fatal(err)
					}
					if rec.Channel != "IA" || rec.Unit != "A" || rec.Station != "Station X" || rec.LineFreq != 60 {
						t.Errorf("channel %q %q, station %q, lf %g", rec.Channel, rec.Unit, rec.Station, rec.LineFreq)
					}
					if len(rec.Segments) != 2 || rec.Segments[0] != segs[0] || rec.Segments[1] != segs[1] {
						t.Errorf("segments %v, want %v", rec.Segments, segs)
					}
					if !rec.Start.Equal(w.Start) || !rec.Trigger.Equal(w.Trigger) {
						t.Errorf("start %v trigger %v, want %v %v", rec.Start, rec.Trigger, w.Start, w.Trigger)
					}
					if rev != 1991 && !cff && rec.Nominal != 5 {
						t.Errorf("nominal %g (%s), want the secondary rating 5 (values in secondary units)", rec.Nominal, rec.NominalSource)
					}
					if rev == 1991 && rec.Nominal != 0 {
						t.Errorf("nominal %g (%s), want none (1991 has no ratings)", rec.Nominal, rec.NominalSource)
					}
					if cff && (rec.Nominal != 66 || rec.NominalSource != "INF nominal") {
						t.Errorf("nominal %g (%s), want 66 from the INF", rec.Nominal, rec.NominalSource)
					}
					if rev != 1991 {
						p, err := Read(path, Options{Channel: "IA", Primary: true})
						if err != nil {
							t.Fatal(err)
						}
						for i := range p.Samples {
							if want := rec.Samples[i] * 1200 / 5; math.Abs(p.Samples[i]-want) > 1e-12*math.Abs(want) {
								t.Fatalf("primary sample %d = %g, want %g = secondary * 1200/5", i, p.Samples[i], want)
							}
						}
					}
				})
			}
		}
	}
}

func checkChannel(t *testing.T, rec *Recording, w *COMTRADE, k int, ft string) {
	t.Helper()
	ch := w.Analogs[k]
	if rec.Channel != ch.ID || rec.Index != k+1 {
		t.Fatalf("channel %q (%d), want %q (%d)", rec.Channel, rec.Index, ch.ID, k+1)
	}
	if len(rec.Samples) != len(ch.Samples) {
		t.Fatalf("%d samples, want %d", len(rec.Samples), len(ch.Samples))
	}
	for i, v := range ch.Samples {
		want := stored(ft, ch.A, ch.B, v)
		got := rec.Samples[i]
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want))) {
			t.Fatalf("channel %s sample %d = %g, want %g", ch.ID, i, got, want)
		}
		if !math.IsNaN(v) && math.Abs(got-v) > ch.A/2*(1+1e-9) && ft != Float32 {
			t.Fatalf("channel %s sample %d = %g, more than a/2 from the written %g", ch.ID, i, got, v)
		}
	}
	if want := nanGaps(ch.Samples, "missing value"); fmt.Sprint(rec.Gaps) != fmt.Sprint(want) {
		t.Fatalf("gaps %v, want %v", rec.Gaps, want)
	}
}

// TestTimestamped: nrates = 0 gives one segment whose rate comes from the
// timestamps times timemult.
func TestTimestamped(t *testing.T) {
	for _, tm := range []float64{1, 2, 0.5} {
		for _, ft := range []string{ASCII, Binary} {
			w := testWriter(2013, ft, []Segment{{Start: 0, End: 200, Rate: 2000}}, true)
			w.TimeMult = tm
			cfg, dat, err := w.Encode()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ReadCOMTRADE("t.cfg", cfg, "t.dat", dat, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Segments) != 1 || math.Abs(rec.Segments[0].Rate-2000) > 1e-9 {
				t.Errorf("timemult %g %s: segments %v, want one at 2000 Hz", tm, ft, rec.Segments)
			}
		}
	}
}

// TestUntidyConfigs reads hand-written configurations the way real
// recorders write them.
func TestUntidyConfigs(t *testing.T) {
	dat := "1,0,100,0\r\n2,500,-100,1\r\n3,1000,200,0\r\n4,1500,99999,1\r\n\x1a"
	gbk := []byte{0xB1, 0xE4, 0xB5, 0xE7, 0xD5, 0xBE} // 变电站 in GBK
	cases := []struct {
		name, cfg string
		opt       Options
		check     func(t *testing.T, r *Recording)
	}{
		{"crlf latin1 two-digit year", "Gen\xe8ve,R1,1999\r\n2,1A,1D\r\n1,V1,A,,V,0.5,1,0,-99999,99998,1,1,P\r\n1,TRIP,,,0\r\n50\r\n1\r\n2000,4\r\n31/12/99,23:59:59.5\r\n01/01/00,00:00:00\r\nASCII\r\n1\r\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.Station != "Genève" {
					t.Errorf("station %q, want Genève (Latin-1)", r.Station)
				}
				if want := time.Date(1999, 12, 31, 23, 59, 59, 5e8, time.UTC); !r.Start.Equal(want) {
					t.Errorf("start %v, want %v", r.Start, want)
				}
				if r.Trigger.Year() != 2000 {
					t.Errorf("trigger %v, want year 2000", r.Trigger)
				}
				if got := r.Samples[:3]; got[0] != 51 || got[1] != -49 || got[2] != 101 {
					t.Errorf("samples %v, want 0.5x+1 = 51, -49, 101", got)
				}
				if len(r.Gaps) != 1 || r.Gaps[0] != (Gap{3, 4, "missing value"}) {
					t.Errorf("gaps %v, want sample 3 (99999)", r.Gaps)
				}
				wantWarn(t, r, "two-digit year", "latin1")
			}},
		{"gbk station", string(gbk) + ",R1,2013\n1,1A,0D\n1,U,,,V,1,0,0,-1,1,1,1,P\n50\n1\n2000,4\n01/02/2020,00:00:00\n01/02/2020,00:00:00\nASCII\n1\n+8,+8\n0,0\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.Station != "变电站" {
					t.Errorf("station %q, want 变电站 (GBK)", r.Station)
				}
			}},
		{"cp1251 station", cp1251("Подстанция 110 кВ") + ",R1,1999\n1,1A,0D\n1,Ua,,,V,1,0,0,-1,1,1,1,P\n50\n1\n2000,4\n01/02/2020,00:00:00\n01/02/2020,00:00:00\nASCII\n1\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.Station != "Подстанция 110 кВ" {
					t.Errorf("station %q, want Подстанция 110 кВ (Windows-1251)", r.Station)
				}
				wantWarn(t, r, "cp1251")
			}},
		{"cp1251 given", cp1251("Ёлка") + ",R1,1999\n1,1A,0D\n1,Ua,,,V,1,0,0,-1,1,1,1,P\n50\n1\n2000,4\n01/02/2020,00:00:00\n01/02/2020,00:00:00\nASCII\n1\n", Options{Encoding: "windows-1251"},
			func(t *testing.T, r *Recording) {
				if r.Station != "Ёлка" {
					t.Errorf("station %q, want Ёлка", r.Station)
				}
			}},
		{"1991 mm/dd/yy, no timemult", "OLD,R\n2,1A,1D\n1,V,A,,V,2,0,0,-32767,32767\n1,TRIP,0\n60\n1\n1000,4\n02/03/91,00:00:00.000\n02/03/91,00:00:00.000\nASCII\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.Start.Month() != 2 || r.Start.Day() != 3 || r.Start.Year() != 1991 {
					t.Errorf("start %v, want 3 Feb 1991 (mm/dd/yy)", r.Start)
				}
				if r.Samples[0] != 200 || r.Format != "COMTRADE 1991 ASCII" {
					t.Errorf("sample 0 = %g (%s), want 200", r.Samples[0], r.Format)
				}
			}},
		{"two rate segments", "S,R,1999\n2,1A,1D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n1,T,,,0\n50\n2\n4000,2\n1000,4\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n", Options{},
			func(t *testing.T, r *Recording) {
				if len(r.Segments) != 2 || r.Segments[0] != (Segment{Start: 0, End: 2, Rate: 4000}) || r.Segments[1] != (Segment{Start: 2, End: 4, Rate: 1000}) {
					t.Errorf("segments %v", r.Segments)
				}
				if got := r.Time(3); math.Abs(got-(2.0/4000+1.0/1000)) > 1e-15 {
					t.Errorf("time of sample 3 = %g, want 2/4000 + 1/1000", got)
				}
			}},
		{"nrates 0 timemult 10", "S,R,2013\n2,1A,1D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n1,T,,,0\n50\n0\n0,4\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n10\n0,0\n0,0\n", Options{},
			func(t *testing.T, r *Recording) {
				// timestamps 0, 500, 1000, 1500 x 10 µs: 200 Hz
				if len(r.Segments) != 1 || math.Abs(r.Segments[0].Rate-200) > 1e-9 {
					t.Errorf("segments %v, want 200 Hz from the timestamps", r.Segments)
				}
				// 99999 is missing in 2013 too, as python-comtrade reads it
				// (issue 37): a gap, with a warning
				if len(r.Gaps) != 1 || !math.IsNaN(r.Samples[3]) || len(r.Warnings) == 0 {
					t.Errorf("2013 ASCII 99999 is not read as missing: %v %v %q", r.Gaps, r.Samples, r.Warnings)
				}
			}},
		{"swapped day month", "S,R,1999\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n50\n1\n1000,4\n12/25/2020,00:00:00\n12/25/2020,00:00:00\nASCII\n1\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.Start.Month() != 12 || r.Start.Day() != 25 {
					t.Errorf("start %v, want 25 Dec", r.Start)
				}
				wantWarn(t, r, "swapped")
			}},
		{"wrong line frequency", "S,R,1999\n1,1A,0D\n1,V,A,,V,1,0,0,-1,1,1,1,P\n60\n1\n1000,4\n01/01/2020,00:00:00\n01/01/2020,00:00:00\nASCII\n1\n", Options{},
			func(t *testing.T, r *Recording) {
				if r.LineFreq != 60 {
					t.Errorf("line frequency %g", r.LineFreq)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := dat
			if strings.Contains(c.cfg, "1,0D") || strings.Contains(c.cfg, "1,1A,0D") {
				d = strings.NewReplacer(",0\r\n", "\r\n", ",1\r\n", "\r\n").Replace(dat)
			}
			rec, err := ReadCOMTRADE("x.cfg", []byte(c.cfg), "x.dat", []byte(d), c.opt)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, rec)
		})
	}
}

func wantWarn(t *testing.T, r *Recording, subs ...string) {
	t.Helper()
	all := strings.Join(r.Warnings, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			t.Errorf("no warning with %q in %q", s, r.Warnings)
		}
	}
}

// TestWrongLineFrequencyWarns: a 50 Hz signal in a cfg that says 60 Hz is
// reported, with the frequency the zero crossings give.
func TestWrongLineFrequencyWarns(t *testing.T) {
	x := make([]float64, 4000)
	for i := range x {
		x[i] = 100 * math.Sin(2*math.Pi*50*float64(i)/4000+0.3)
	}
	for _, stated := range []float64{60, 50} {
		w := &COMTRADE{Rev: 1999, FileType: Binary, LineFreq: stated, Segments: []Segment{{Start: 0, End: len(x), Rate: 4000}},
			Analogs: []Channel{{ID: "V", A: 0.01, Samples: x}}}
		cfg, dat, err := w.Encode()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ReadCOMTRADE("f.cfg", cfg, "f.dat", dat, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(rec.EstFreq-50) > 1e-3 {
			t.Errorf("estimated %g Hz, want 50", rec.EstFreq)
		}
		warned := strings.Contains(strings.Join(rec.Warnings, " "), "more than 2% apart")
		if warned != (stated == 60) {
			t.Errorf("stated %g Hz: warned %v, want %v (%q)", stated, warned, stated == 60, rec.Warnings)
		}
	}
}

// TestChannelErrors: an unknown channel, or a digital one (by number or
// by ch_id), is refused with the accepted forms and the file's channels.
func TestChannelErrors(t *testing.T) {
	w := testWriter(1999, ASCII, []Segment{{Start: 0, End: 10, Rate: 1000}}, false)
	cfg, dat, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Digitals) == 0 || w.Digitals[0].ID != "D1" {
		t.Fatalf("the test writer's digital channels changed: %+v", w.Digitals)
	}
	channels := `analog (An ch_id) A1 "IA", A2 "VB"; digital (Dn ch_id) D1 "D1"`
	for _, c := range []struct{ sel, want string }{
		{"VC", `no analog channel "VC"`},
		{"A3", `no analog channel "A3"`},
		{"0", `no analog channel "0"`},
		{"D2", `channel "D2": a digital (status) channel is not a waveform`},
		{"d1", `channel "d1": a digital (status) channel is not a waveform`},
	} {
		_, err = ReadCOMTRADE("c.cfg", cfg, "c.dat", dat, Options{Channel: c.sel})
		for _, want := range []string{c.want, "c.cfg", channels, `accepted: an analog channel's ch_id, its number n or An`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("channel %q: error %v, want %q", c.sel, err, want)
			}
		}
	}
}

// cp1251 is s in Windows-1251, by its table: Ё 0xA8, ё 0xB8, А..я
// 0xC0..0xFF in Unicode's order (U+0410..U+044F), ASCII as it is.
func cp1251(s string) string {
	var b []byte
	for _, r := range s {
		switch {
		case r < 0x80:
			b = append(b, byte(r))
		case r == 'Ё':
			b = append(b, 0xA8)
		case r == 'ё':
			b = append(b, 0xB8)
		case r >= 0x410 && r <= 0x44F:
			b = append(b, byte(0xC0+r-0x410))
		default:
			panic("cp1251: no byte for " + string(r))
		}
	}
	return string(b)
}
