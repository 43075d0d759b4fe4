package record

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadCSV reads one channel of a CSV recording. Lines are comma-,
// semicolon- or tab-separated (the separator is the one of the first
// data line); empty lines and lines starting with '#' are skipped; a first
// line whose first field is not a number is a header. With two or more
// columns the first is the time in seconds and opt.Channel picks a value
// column (header name or number 1..; default the first); the rate is
// (n-1)/(t_last - t_first) and every step must be within 1 % of
// 1/rate. With one column the samples are at opt.Rate Hz. An empty value,
// "NaN" or "nan" is a missing sample.
func ReadCSV(path string, b []byte, opt Options) (*Recording, error) {
	text, enc, guessed, err := decodeText(b, opt.Encoding)
	if err != nil {
		return nil, fmt.Errorf("record: %s: %w", path, err)
	}
	rec := &Recording{Path: path, Format: "CSV"}
	if guessed {
		rec.warnf("%s: not UTF-8; read as %s", path, enc)
	}
	lines := splitLines(text)
	sep := ""
	var header []string
	var times []float64
	col, ncol := -1, 0
	for i, l := range lines {
		line := i + 1
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") || t == "\x1a" {
			continue
		}
		if sep == "" {
			sep = ","
			for _, s := range []string{";", "\t"} {
				if strings.Count(t, s) > strings.Count(t, sep) {
					sep = s
				}
			}
		}
		f := strings.Split(t, sep)
		for k := range f {
			f[k] = strings.TrimSpace(f[k])
		}
		if ncol == 0 {
			ncol = len(f)
			if _, err := strconv.ParseFloat(f[0], 64); err != nil && header == nil {
				header = f
				ncol = 0
				continue
			}
			if header != nil && len(header) != ncol {
				return nil, lineErr(path, line, "%d columns, but the header has %d", ncol, len(header))
			}
			if ncol == 1 && !(opt.Rate > 0) {
				return nil, lineErr(path, line, "one column and no rate: give the rate (Options.Rate, --input-rate HZ), or a time column first (time,value)")
			}
			if ncol > 1 && opt.Rate != 0 {
				return nil, lineErr(path, line, "%d columns: the first is the time, so a rate (%g Hz) must not be given", ncol, opt.Rate)
			}
			if col, err = csvColumn(path, header, ncol, opt.Channel); err != nil {
				return nil, err
			}
			rec.Index = col
			if ncol == 1 {
				rec.Index = 1
			}
			rec.Channel = strconv.Itoa(rec.Index)
			if header != nil {
				rec.Channel = header[col]
			}
		}
		if len(f) != ncol {
			return nil, lineErr(path, line, "%d fields, want %d as on the first data line", len(f), ncol)
		}
		if ncol > 1 {
			tv, err := strconv.ParseFloat(f[0], 64)
			if err != nil || math.IsNaN(tv) || math.IsInf(tv, 0) {
				return nil, lineErr(path, line, "time %q, want a finite number of seconds", clip(f[0]))
			}
			times = append(times, tv)
		}
		vs := f[col]
		if ncol == 1 {
			vs = f[0]
		}
		v := math.NaN()
		if vs != "" && !strings.EqualFold(vs, "nan") {
			v, err = strconv.ParseFloat(vs, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, lineErr(path, line, "value %q, want a finite number (empty or NaN: missing)", clip(vs))
			}
		}
		rec.Samples = append(rec.Samples, v)
		if len(times) > 1 {
			if err := checkStep(path, line, times); err != nil {
				return nil, err
			}
		}
	}
	n := len(rec.Samples)
	if n < 2 {
		return nil, fmt.Errorf("record: %s: %d samples, want at least 2", path, n)
	}
	rate := opt.Rate
	if ncol > 1 {
		rate = float64(n-1) / (times[n-1] - times[0])
		// The steps were checked against the running estimate; check
		// them again against the final one.
		dt := 1 / rate
		for i := 1; i < n; i++ {
			if s := times[i] - times[i-1]; math.Abs(s-dt) > 0.01*dt {
				return nil, fmt.Errorf("record: %s: time step %g s before sample %d, want %g s ± 1 %% (uneven sampling; resample the file evenly first)", path, s, i, dt)
			}
		}
	}
	rec.Segments = []Segment{{Start: 0, End: n, Rate: rate}}
	rec.finish()
	return rec, nil
}

// checkStep checks the last step of times against the mean step so far.
func checkStep(path string, line int, times []float64) error {
	n := len(times)
	step := times[n-1] - times[n-2]
	if !(step > 0) {
		return lineErr(path, line, "time %g does not increase (previous %g)", times[n-1], times[n-2])
	}
	mean := (times[n-1] - times[0]) / float64(n-1)
	if math.Abs(step-mean) > 0.01*mean {
		return lineErr(path, line, "time step %g s, want %g s ± 1 %% as before (uneven sampling; resample the file evenly first)", step, mean)
	}
	return nil
}

// csvColumn returns the index of the value column sel picks.
func csvColumn(path string, header []string, ncol int, sel string) (int, error) {
	if ncol == 1 {
		if sel != "" && sel != "1" && (header == nil || sel != header[0]) {
			return 0, fmt.Errorf("record: %s: no column %q; the file has one value column", path, sel)
		}
		return 0, nil
	}
	if sel == "" {
		return 1, nil
	}
	if header != nil {
		for k := 1; k < ncol; k++ {
			if header[k] == sel || strings.EqualFold(header[k], sel) {
				return k, nil
			}
		}
	}
	if k, err := strconv.Atoi(sel); err == nil && k >= 1 && k < ncol {
		return k, nil
	}
	names := "numbers 1.." + strconv.Itoa(ncol-1)
	if header != nil {
		names += " or names " + strings.Join(header[1:], ", ")
	}
	return 0, fmt.Errorf("record: %s: no value column %q; the value columns are %s", path, sel, names)
}

// WriteRawCSV writes rec's samples in engineering units at the file's own
// rate: a header line "time,<channel> (<unit>)", then "t,v" a sample, t in
// seconds from the first sample, both with the shortest formatting that
// reads back to the same float64; a missing sample has an empty value.
func WriteRawCSV(w io.Writer, rec *Recording) error {
	bw := bufio.NewWriter(w)
	name := rec.Channel
	if rec.Unit != "" {
		name += " (" + rec.Unit + ")"
	}
	name = strings.NewReplacer(",", " ", "\n", " ", "\r", " ").Replace(name)
	fmt.Fprintf(bw, "time,%s\n", name)
	var b []byte
	for i, v := range rec.Samples {
		b = strconv.AppendFloat(b[:0], rec.Time(i), 'g', -1, 64)
		b = append(b, ',')
		if !math.IsNaN(v) {
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
