package record

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"golang.org/x/text/encoding/charmap"
)

// Device-quirk recordings (testdata/recordings/quirk-*): short COMTRADE
// files written as field devices write them, each with one departure from
// the standard that a reader must take. The signal of each: QuirkSamples
// samples at QuirkRate Hz of a 50 Hz phase voltage of 230 V RMS,
// v[n] = sqrt(2) * 230 * sin(2 pi 50 n / QuirkRate), no noise, stored as
// x = v / 0.01 (a = 0.01 V).
const (
	QuirkRate    = 3200
	QuirkSamples = 640
	// QuirkMissingFrom and QuirkMissingTo bound the samples that
	// quirk-99999.dat stores as 99999.
	QuirkMissingFrom, QuirkMissingTo = 100, 105
)

// The off-frequency, low-rate and off-level quirks.
const (
	QuirkOffFreq = 64.8 // Hz
	QuirkLowRate = 100  // Hz
	QuirkLevel   = 1.065
)

// The timestamp-jump quirk: QuirkJumpSamples samples at QuirkRate Hz in
// one rate segment of the cfg, whose timestamps skip QuirkJump s between
// samples QuirkJumpAt-1 and QuirkJumpAt (a recorder that paused).
const (
	QuirkJump        = 3.28 // s
	QuirkJumpAt      = 1000
	QuirkJumpSamples = 1920
)

// QuirkLatin1Station is quirk-latin1.cfg's station name.
const QuirkLatin1Station = "Estação de Medição"

// QuirkSignal is the quirk recordings' signal at sample n, volts.
func QuirkSignal(n int) float64 {
	return math.Sqrt2 * SynthNominal * math.Sin(2*math.Pi*SynthFreq*float64(n)/QuirkRate)
}

// quirkCOMTRADE is the quirk recordings' signal as a COMTRADE 2013 ASCII
// value (CR LF).
func quirkCOMTRADE(station string, x []float64) *COMTRADE {
	return quirkAt(station, x, QuirkRate)
}

// quirkAt is quirkCOMTRADE sampled at rate Hz.
func quirkAt(station string, x []float64, rate float64) *COMTRADE {
	start := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	return &COMTRADE{Rev: 2013, FileType: ASCII, Station: station, Device: "record.QuirkFiles", LineFreq: SynthFreq,
		Segments: []Segment{{Start: 0, End: len(x), Rate: rate}},
		Start:    start, Trigger: start.Add(50 * time.Millisecond), CRLF: true,
		Analogs: []Channel{{ID: "VA", Phase: "A", Unit: "V", A: 0.01, Primary: SynthNominal, Secondary: SynthNominal, PS: "P", Samples: x}},
	}
}

// QuirkFiles returns the device-quirk recordings by name:
//
//   - quirk-eofmark.cfg, .dat: a run of four 0x1A bytes (a DOS
//     end-of-file mark) right after the last line of each, without a line
//     end (the cfg's last line is 2013's time-quality and leapsec line);
//   - quirk-99999.cfg, .dat: samples QuirkMissingFrom..QuirkMissingTo-1
//     stored as 99999, the 1991/1999 missing-value marker, in a 2013 file
//     (whose marker is an empty field): read as missing, as
//     python-comtrade reads them;
//   - quirk-latin1.cfg, .dat: the station name QuirkLatin1Station written
//     in Latin-1 (ç E7, ã E3: two accented letters side by side);
//   - quirk-offfreq.cfg, .dat: a QuirkOffFreq Hz sine (no power system's)
//     at QuirkRate Hz;
//   - quirk-lowrate.cfg, .dat: the 50 Hz signal sampled at QuirkLowRate
//     Hz (2 samples a cycle), v[n] = sqrt(2) 230 sin(pi n + 0.5);
//   - quirk-level.cfg, .dat: the 50 Hz signal at QuirkLevel times the
//     stated nominal (230 V) throughout;
//   - quirk-timejump.cfg, .dat: QuirkJumpSamples samples of the 50 Hz
//     signal in one rate segment, the timestamps of samples QuirkJumpAt on
//     QuirkJump s later than the rate gives (3.28 s is 164 whole cycles,
//     so the sine goes on in phase).
func QuirkFiles() (map[string][]byte, error) {
	x := make([]float64, QuirkSamples)
	for n := range x {
		x[n] = QuirkSignal(n)
	}
	files := map[string][]byte{}
	cfg, dat, err := quirkCOMTRADE("uaxai quirk: EOF mark", x).Encode()
	if err != nil {
		return nil, err
	}
	mark := bytes.Repeat([]byte{0x1a}, 4)
	files["quirk-eofmark.cfg"] = append(bytes.TrimRight(cfg, "\r\n"), mark...)
	files["quirk-eofmark.dat"] = append(bytes.TrimRight(dat, "\r\n"), mark...)

	y := append([]float64(nil), x...)
	for n := QuirkMissingFrom; n < QuirkMissingTo; n++ {
		y[n] = 999.99 // x = 99999 at a = 0.01 V
	}
	if files["quirk-99999.cfg"], files["quirk-99999.dat"], err = quirkCOMTRADE("uaxai quirk: 99999", y).Encode(); err != nil {
		return nil, err
	}

	if cfg, dat, err = quirkCOMTRADE(QuirkLatin1Station, x).Encode(); err != nil {
		return nil, err
	}
	latin1, err := charmap.ISO8859_1.NewEncoder().Bytes([]byte(QuirkLatin1Station))
	if err != nil {
		return nil, err
	}
	files["quirk-latin1.cfg"] = bytes.Replace(cfg, []byte(QuirkLatin1Station), latin1, 1)
	files["quirk-latin1.dat"] = dat

	sig := func(f func(n int) float64, m int) []float64 {
		y := make([]float64, m)
		for n := range y {
			y[n] = f(n)
		}
		return y
	}
	for _, q := range []struct {
		name string
		x    []float64
		rate float64
	}{
		{"quirk-offfreq", sig(func(n int) float64 {
			return math.Sqrt2 * SynthNominal * math.Sin(2*math.Pi*QuirkOffFreq*float64(n)/QuirkRate)
		}, QuirkSamples), QuirkRate},
		{"quirk-lowrate", sig(func(n int) float64 { return math.Sqrt2 * SynthNominal * math.Sin(math.Pi*float64(n)+0.5) }, 200), QuirkLowRate},
		{"quirk-level", sig(func(n int) float64 { return QuirkLevel * QuirkSignal(n) }, QuirkSamples), QuirkRate},
	} {
		if files[q.name+".cfg"], files[q.name+".dat"], err = quirkAt("uaxai "+q.name, q.x, q.rate).Encode(); err != nil {
			return nil, err
		}
	}
	jump := quirkAt("uaxai quirk-timejump", sig(QuirkSignal, QuirkJumpSamples), QuirkRate)
	jump.Segments = []Segment{{Start: 0, End: QuirkJumpAt, Rate: QuirkRate}, {Start: QuirkJumpAt, End: QuirkJumpSamples, Rate: QuirkRate, Skip: QuirkJump}}
	if cfg, dat, err = jump.Encode(); err != nil {
		return nil, err
	}
	// one rate segment in the cfg: the jump is in the timestamps alone
	two := fmt.Sprintf("2\r\n%d,%d\r\n%d,%d\r\n", QuirkRate, QuirkJumpAt, QuirkRate, QuirkJumpSamples)
	one := fmt.Sprintf("1\r\n%d,%d\r\n", QuirkRate, QuirkJumpSamples)
	if bytes.Count(cfg, []byte(two)) != 1 {
		return nil, fmt.Errorf("record: quirk-timejump.cfg: the rate lines %q not found", two)
	}
	files["quirk-timejump.cfg"] = bytes.Replace(cfg, []byte(two), []byte(one), 1)
	files["quirk-timejump.dat"] = dat
	return files, nil
}
