package record

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// wavFile builds a WAV file: a fmt chunk (extensible when ext), an odd
// LIST chunk before the data (padded to even), and the data.
func wavFile(tag, chans, rate, bits int, ext bool, data []byte) []byte {
	le := binary.LittleEndian
	fmtc := le.AppendUint16(nil, uint16(tag))
	if ext {
		fmtc = le.AppendUint16(nil, waveExtensible)
	}
	fmtc = le.AppendUint16(fmtc, uint16(chans))
	fmtc = le.AppendUint32(fmtc, uint32(rate))
	fmtc = le.AppendUint32(fmtc, uint32(rate*chans*bits/8))
	fmtc = le.AppendUint16(fmtc, uint16(chans*bits/8))
	fmtc = le.AppendUint16(fmtc, uint16(bits))
	if ext {
		fmtc = le.AppendUint16(fmtc, 22)
		fmtc = le.AppendUint16(fmtc, uint16(bits))
		fmtc = le.AppendUint32(fmtc, 0)
		fmtc = le.AppendUint16(fmtc, uint16(tag))
		fmtc = append(fmtc, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71)
	}
	var body []byte
	chunk := func(id string, b []byte) {
		body = append(body, id...)
		body = le.AppendUint32(body, uint32(len(b)))
		body = append(body, b...)
		if len(b)%2 == 1 {
			body = append(body, 0)
		}
	}
	chunk("fmt ", fmtc)
	chunk("LIST", []byte("odd"))
	chunk("data", data)
	out := append([]byte("RIFF"), le.AppendUint32(nil, uint32(4+len(body)))...)
	return append(append(out, "WAVE"...), body...)
}

// TestWAVFormats: every sample format, two channels, the closed-form
// scaling x / 2^(bits-1) (8-bit: (x-128)/128) times the full scale.
func TestWAVFormats(t *testing.T) {
	le := binary.LittleEndian
	type frame [2]float64 // the values the frames should read as (before full scale)
	cases := []struct {
		name      string
		tag, bits int
		enc       func(v float64) []byte
		vals      []frame
	}{
		{"pcm8", wavePCM, 8, func(v float64) []byte { return []byte{byte(v*128 + 128)} }, []frame{{-1, 0.5}, {0, 127.0 / 128}}},
		{"pcm16", wavePCM, 16, func(v float64) []byte { return le.AppendUint16(nil, uint16(int16(v*32768))) }, []frame{{-1, 0.25}, {32767.0 / 32768, -0.5}}},
		{"pcm24", wavePCM, 24, func(v float64) []byte {
			x := uint32(int32(v * (1 << 23)))
			return []byte{byte(x), byte(x >> 8), byte(x >> 16)}
		}, []frame{{-1, 0.125}, {(1<<23 - 1) / float64(1<<23), -3.0 / (1 << 23)}}},
		{"pcm32", wavePCM, 32, func(v float64) []byte { return le.AppendUint32(nil, uint32(int32(v*(1<<31)))) }, []frame{{-1, 0.75}, {-0.5, 1.0 / (1 << 31)}}},
		{"float32", waveFloat, 32, func(v float64) []byte { return le.AppendUint32(nil, math.Float32bits(float32(v))) }, []frame{{1.5, -2}, {0.25, 0}}},
		{"float64", waveFloat, 64, func(v float64) []byte { return le.AppendUint64(nil, math.Float64bits(v)) }, []frame{{0.1, -7}, {3, 1e-9}}},
	}
	for _, c := range cases {
		for _, ext := range []bool{false, true} {
			var data []byte
			for _, f := range c.vals {
				data = append(append(data, c.enc(f[0])...), c.enc(f[1])...)
			}
			b := wavFile(c.tag, 2, 8000, c.bits, ext, data)
			for ch := 1; ch <= 2; ch++ {
				rec, err := ReadWAV("t.wav", b, Options{Channel: string(rune('0' + ch)), FullScale: 10})
				if err != nil {
					t.Fatalf("%s ext=%v: %v", c.name, ext, err)
				}
				if rec.Rate() != 8000 || len(rec.Samples) != len(c.vals) {
					t.Fatalf("%s: %d samples at %g Hz", c.name, len(rec.Samples), rec.Rate())
				}
				for i, f := range c.vals {
					if want := f[ch-1] * 10; math.Abs(rec.Samples[i]-want) > 1e-15*math.Abs(want) {
						t.Errorf("%s ext=%v channel %d frame %d: %v, want %v", c.name, ext, ch, i, rec.Samples[i], want)
					}
				}
			}
		}
	}
}

// TestWAVRoundTrip: EncodeWAV then ReadWAV gives the values to within
// half a step (16-bit) or float32 rounding.
func TestWAVRoundTrip(t *testing.T) {
	x := []float64{0, 100, -399.9, 250.5, -400}
	for _, bits := range []int{16, 32} {
		b, err := EncodeWAV(x, 1000, bits, 400)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ReadWAV("r.wav", b, Options{FullScale: 400})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			tol := 400.0 / 32768 / 2
			if bits == 32 {
				tol = math.Abs(v) * 6e-8
			}
			if math.Abs(rec.Samples[i]-v) > tol {
				t.Errorf("%d bits: sample %d = %g, want %g ± %g", bits, i, rec.Samples[i], v, tol)
			}
		}
	}
}

// TestMalformedWAV: broken WAV files name the byte offset.
func TestMalformedWAV(t *testing.T) {
	le := binary.LittleEndian
	good := wavFile(wavePCM, 1, 8000, 16, false, le.AppendUint16(le.AppendUint16(nil, 1), 2))
	cases := []struct {
		name string
		b    []byte
		opt  Options
		want string
	}{
		{"not riff", []byte("RIFX0000WAVE"), Options{}, "byte offset 0"},
		{"bad tag", wavFile(2, 1, 8000, 16, false, []byte{0, 0}), Options{}, "byte offset 20: format tag 2"},
		{"bad bits", wavFile(wavePCM, 1, 8000, 12, false, []byte{0, 0}), Options{}, "with 12 bits"},
		{"float16", wavFile(waveFloat, 1, 8000, 16, false, []byte{0, 0}), Options{}, "IEEE float (3) of 32 or 64"},
		{"zero rate", wavFile(wavePCM, 1, 0, 16, false, []byte{0, 0}), Options{}, "byte offset 22"},
		{"no data", good[:48], Options{}, "no data chunk"},
		{"short fmt", append([]byte("RIFF\x10\x00\x00\x00WAVEfmt \x04\x00\x00\x00"), 1, 0, 1, 0), Options{}, "fmt chunk of 4 bytes"},
		{"fmt beyond", append([]byte("RIFF\x10\x00\x00\x00WAVEfmt \x40\x00\x00\x00"), 1, 0, 1, 0), Options{}, "byte offset 12: chunk \"fmt \" of 64 bytes"},
		{"channel", good, Options{Channel: "2"}, "a WAV channel is a number 1..1"},
		{"nan", wavFile(waveFloat, 1, 8000, 32, false, le.AppendUint32(nil, 0x7FC00000)), Options{}, "is NaN"},
		{"empty data", wavFile(wavePCM, 1, 8000, 16, false, nil), Options{}, "no samples"},
	}
	for _, c := range cases {
		_, err := ReadWAV("m.wav", c.b, c.opt)
		if err == nil || !strings.Contains(err.Error(), "m.wav") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming m.wav and %q", c.name, err, c.want)
		}
	}
	// A data chunk longer than the file is read as far as it goes.
	trunc := good[:len(good)-1]
	rec, err := ReadWAV("t.wav", trunc, Options{})
	if err != nil || len(rec.Samples) != 1 {
		t.Fatalf("truncated data: %v, %v", rec, err)
	}
	wantWarn(t, rec, "data chunk says 4 bytes")
}

// TestCSV reads the accepted CSV shapes.
func TestCSV(t *testing.T) {
	cases := []struct {
		name, in string
		opt      Options
		rate     float64
		vals     []float64
		ch       string
	}{
		{"header", "time,v\n0,1\n0.001,2\n0.002,3\n", Options{}, 1000, []float64{1, 2, 3}, "v"},
		{"no header crlf", "0,1\r\n0.5,2\r\n1,3\r\n", Options{}, 2, []float64{1, 2, 3}, "1"},
		{"semicolon comments", "# recorder X\ntime;a;b\n0;1;10\n0.25;2;20\n", Options{Channel: "b"}, 4, []float64{10, 20}, "b"},
		{"column number", "t,a,b\n0,1,10\n0.25,2,20\n", Options{Channel: "2"}, 4, []float64{10, 20}, "b"},
		{"one column", "value\n5\n6\n7\n", Options{Rate: 100}, 100, []float64{5, 6, 7}, "value"},
		{"gap", "t,v\n0,1\n1,\n2,NaN\n3,4\n", Options{}, 1, []float64{1, math.NaN(), math.NaN(), 4}, "v"},
		{"rounded times", "t,v\n0,1\n0.333,2\n0.667,3\n1,4\n", Options{}, 3, []float64{1, 2, 3, 4}, "v"},
	}
	for _, c := range cases {
		rec, err := ReadCSV("c.csv", []byte(c.in), c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(rec.Rate()-c.rate) > 1e-9 || rec.Channel != c.ch || len(rec.Samples) != len(c.vals) {
			t.Fatalf("%s: rate %g channel %q %v, want %g %q %v", c.name, rec.Rate(), rec.Channel, rec.Samples, c.rate, c.ch, c.vals)
		}
		for i, v := range c.vals {
			if !(rec.Samples[i] == v || (math.IsNaN(v) && math.IsNaN(rec.Samples[i]))) {
				t.Errorf("%s: sample %d = %g, want %g", c.name, i, rec.Samples[i], v)
			}
		}
	}
	bad := []struct{ name, in, want string }{
		{"uneven", "t,v\n0,1\n1,2\n2,3\n3.5,4\n", "c.csv: line 5: time step 1.5 s"},
		{"decreasing", "t,v\n0,1\n1,2\n0.5,3\n", "c.csv: line 4: time 0.5 does not increase"},
		{"value", "t,v\n0,1\n1,x\n", `c.csv: line 3: value "x"`},
		{"time", "t,v\n0,1\nx,2\n", `c.csv: line 3: time "x"`},
		{"fields", "t,v\n0,1\n1,2,3\n", "c.csv: line 3: 3 fields, want 2"},
		{"header width", "t,v,w\n0,1\n", "c.csv: line 2: 2 columns, but the header has 3"},
		{"one column no rate", "1\n2\n", "c.csv: line 1: one column and no rate"},
		{"short", "t,v\n0,1\n", "c.csv: 1 samples"},
		{"channel", "t,a\n0,1\n1,2\n", "no value column \"zz\""},
	}
	for _, c := range bad {
		opt := Options{}
		if c.name == "channel" {
			opt.Channel = "zz"
		}
		_, err := ReadCSV("c.csv", []byte(c.in), opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestRawCSVRoundTrip: WriteRawCSV then ReadCSV gives the same float64
// samples, gaps and rate.
func TestRawCSVRoundTrip(t *testing.T) {
	w := testWriter(2013, Float32, []Segment{{Start: 0, End: 400, Rate: 3000}}, false)
	cfg, dat, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadCOMTRADE("r.cfg", cfg, "r.dat", dat, Options{Channel: "VB"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteRawCSV(&buf, rec); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "time,VB (kV)\n") {
		t.Errorf("header %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	back, err := ReadCSV("raw.csv", buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range rec.Samples {
		if !(back.Samples[i] == v || (math.IsNaN(v) && math.IsNaN(back.Samples[i]))) {
			t.Fatalf("sample %d = %v, want %v", i, back.Samples[i], v)
		}
	}
	if math.Abs(back.Rate()-3000) > 1e-6 || len(back.Gaps) != len(rec.Gaps) {
		t.Errorf("rate %g, %d gaps; want 3000 Hz, %d", back.Rate(), len(back.Gaps), len(rec.Gaps))
	}
}
