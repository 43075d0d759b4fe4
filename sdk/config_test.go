package sdk

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCloneIsDeepAndNormalised: changing the clone leaves the original
// alone, and an array of tables becomes []any of map[string]any.
func TestCloneIsDeepAndNormalised(t *testing.T) {
	c := Config{"a": []any{int64(1), map[string]any{"b": 2.5}}, "t": []map[string]any{{"x": "y"}}}
	d := c.Clone()
	want := Config{"a": []any{int64(1), map[string]any{"b": 2.5}}, "t": []any{map[string]any{"x": "y"}}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("clone %#v, want %#v", d, want)
	}
	d["a"].([]any)[1].(map[string]any)["b"] = 9.0
	d["t"].([]any)[0].(map[string]any)["x"] = "z"
	if c["a"].([]any)[1].(map[string]any)["b"] != 2.5 || c["t"].([]map[string]any)[0]["x"] != "y" {
		t.Errorf("changing the clone changed the original: %#v", c)
	}
}

// errHas fails unless err is an error holding every one of want.
func errHas(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one holding %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not hold %q", what, err, w)
		}
	}
}

func TestOnly(t *testing.T) {
	if err := (Config{}).Only(); err != nil {
		t.Errorf("an empty table with nothing allowed: %v", err)
	}
	if err := (Config(nil)).Only("a"); err != nil {
		t.Errorf("a nil table: %v", err)
	}
	c := Config{"window": int64(3), "stride": int64(1)}
	if err := c.Only("stride", "window", "baseline"); err != nil {
		t.Errorf("allowed keys: %v", err)
	}
	if err := c.Only("window", "stride"); err != nil {
		t.Errorf("exactly the allowed keys: %v", err)
	}
	// The first unknown key in sorted order is named, and the accepted
	// keys are listed sorted.
	err := Config{"zeta": 1.0, "window": 2.0, "alpha": true}.Only("window", "stride", "baseline")
	errHas(t, "two unknown keys", err, `unknown key "alpha" (accepted: baseline, stride, window)`)
	if err != nil && strings.Contains(err.Error(), "zeta") {
		t.Errorf("error %q names the second unknown key too", err)
	}
	errHas(t, "a key when none is allowed", Config{"k": 1.0}.Only(), `unknown key "k" (accepted: )`)
}

func TestFloat(t *testing.T) {
	c := Config{"f64": 2.5, "f32": float32(0.25), "i64": int64(-7), "int": 9, "big": int64(1) << 60,
		"s": "1.5", "b": true, "nan": math.NaN(), "inf": math.Inf(-1), "list": []any{1.0}}
	for _, x := range []struct {
		key  string
		want float64
	}{
		{"f64", 2.5}, {"f32", 0.25}, {"i64", -7}, {"int", 9}, {"big", 1 << 60}, {"absent", 0.125},
	} {
		v, err := c.Float(x.key, 0.125)
		if err != nil || v != x.want {
			t.Errorf("Float(%q) = %v, %v; want %v", x.key, v, err, x.want)
		}
	}
	for _, x := range []struct{ key, want string }{
		{"s", `key "s": want a number, got string "1.5"`},
		{"b", `key "b": want a number, got bool true`},
		{"list", `key "list": want a number, got []interface {}`},
		{"nan", `key "nan": NaN is not a finite number`},
		{"inf", `key "inf": -Inf is not a finite number`},
	} {
		v, err := c.Float(x.key, 0.125)
		errHas(t, "Float("+x.key+")", err, x.want)
		if v != 0 {
			t.Errorf("Float(%q) = %v with its error, want 0", x.key, v)
		}
	}
}

func TestInt(t *testing.T) {
	const lim = 1 << 53 // the largest float64 that still counts as an integer here
	c := Config{"i64": int64(-12), "int": 40, "f": 3.0, "negf": -8.0, "zero": 0.0,
		"lim": float64(lim), "neglim": -float64(lim), "past": float64(lim + 2), "negpast": -float64(lim + 2),
		"half": 2.5, "neghalf": -0.5, "tiny": 1e-300, "nan": math.NaN(), "inf": math.Inf(1),
		"s": "3", "b": false}
	for _, x := range []struct {
		key  string
		want int
	}{
		{"i64", -12}, {"int", 40}, {"f", 3}, {"negf", -8}, {"zero", 0}, {"lim", lim}, {"neglim", -lim}, {"absent", 17},
	} {
		v, err := c.Int(x.key, 17)
		if err != nil || v != x.want {
			t.Errorf("Int(%q) = %v, %v; want %v", x.key, v, err, x.want)
		}
	}
	for _, x := range []struct{ key, want string }{
		{"past", `key "past": want an integer, got 9.007199254740994e+15`},
		{"negpast", `key "negpast": want an integer, got -9.007199254740994e+15`},
		{"half", `key "half": want an integer, got 2.5`},
		{"neghalf", `key "neghalf": want an integer, got -0.5`},
		{"tiny", `key "tiny": want an integer, got 1e-300`},
		{"nan", `key "nan": want an integer, got NaN`},
		{"inf", `key "inf": want an integer, got +Inf`},
		{"s", `key "s": want an integer, got string "3"`},
		{"b", `key "b": want an integer, got bool false`},
	} {
		v, err := c.Int(x.key, 17)
		errHas(t, "Int("+x.key+")", err, x.want)
		if v != 0 {
			t.Errorf("Int(%q) = %v with its error, want 0", x.key, v)
		}
	}
}

func TestIntRange(t *testing.T) {
	const lo, hi = -3, 5
	for _, x := range []struct {
		v    any
		want int
		err  string
	}{
		{int64(lo), lo, ""},
		{float64(lo), lo, ""},
		{int64(hi), hi, ""},
		{float64(hi), hi, ""},
		{int64(0), 0, ""},
		{int64(lo - 1), 0, `key "k": -4 is out of range (accepted: -3..5)`},
		{float64(lo - 1), 0, `key "k": -4 is out of range (accepted: -3..5)`},
		{int64(hi + 1), 0, `key "k": 6 is out of range (accepted: -3..5)`},
		{hi + 1, 0, `key "k": 6 is out of range (accepted: -3..5)`},
		{1.5, 0, `key "k": want an integer, got 1.5`},
		{"2", 0, `key "k": want an integer, got string "2"`},
	} {
		v, err := Config{"k": x.v}.IntRange("k", 1, lo, hi)
		if x.err == "" {
			if err != nil || v != x.want {
				t.Errorf("IntRange(%T %v) = %d, %v; want %d", x.v, x.v, v, err, x.want)
			}
			continue
		}
		errHas(t, fmt.Sprintf("IntRange(%T %v)", x.v, x.v), err, x.err)
		if v != 0 {
			t.Errorf("IntRange(%T %v) = %d with its error, want 0", x.v, x.v, v)
		}
	}
	// The default applies when the key is absent, and must be in range too.
	if v, err := (Config{}).IntRange("k", 4, lo, hi); v != 4 || err != nil {
		t.Errorf("default 4: %d, %v", v, err)
	}
	_, err := Config{}.IntRange("k", hi+1, lo, hi)
	errHas(t, "a default out of range", err, `key "k": 6 is out of range`)
	// A range of one value.
	if v, err := (Config{"k": int64(2)}).IntRange("k", 0, 2, 2); v != 2 || err != nil {
		t.Errorf("IntRange in 2..2: %d, %v", v, err)
	}
}

func TestStringAndBool(t *testing.T) {
	c := Config{"s": "conv4", "empty": "", "t": true, "f": false, "n": 1.0, "bs": "true"}
	for _, x := range []struct{ key, want string }{{"s", "conv4"}, {"empty", ""}, {"absent", "def"}} {
		if v, err := c.String(x.key, "def"); v != x.want || err != nil {
			t.Errorf("String(%q) = %q, %v; want %q", x.key, v, err, x.want)
		}
	}
	for _, key := range []string{"n", "t"} {
		v, err := c.String(key, "def")
		errHas(t, "String("+key+")", err, fmt.Sprintf("key %q: want a string, got %T %v", key, c[key], c[key]))
		if v != "" {
			t.Errorf("String(%q) = %q with its error, want \"\"", key, v)
		}
	}
	for _, x := range []struct {
		key       string
		def, want bool
	}{{"t", false, true}, {"f", true, false}, {"absent", true, true}, {"absent", false, false}} {
		if v, err := c.Bool(x.key, x.def); v != x.want || err != nil {
			t.Errorf("Bool(%q, %v) = %v, %v; want %v", x.key, x.def, v, err, x.want)
		}
	}
	for _, key := range []string{"bs", "n"} {
		v, err := c.Bool(key, true)
		errHas(t, "Bool("+key+")", err, fmt.Sprintf("key %q: want true or false, got %T %s", key, c[key], Quote(c[key])))
		if v {
			t.Errorf("Bool(%q) = true with its error, want false", key)
		}
	}
}

func TestSummariseMaps(t *testing.T) {
	mean := func(dst []float64, r [][]float64) []float64 {
		for _, row := range r {
			for j, v := range row {
				dst[j] += v / float64(len(r))
			}
		}
		return dst
	}
	draws := [][][]float64{
		{{1, 2, 3}, {3, 6, -3}},
		{{4, -4}, {0, 0}, {2, 1}, {-2, 3}},
	}
	res, err := SummariseMaps("summary.mean", draws, 2, mean)
	want := []Result{{Map: []float64{2, 4, 0}}, {Map: []float64{1, 0}}}
	if err != nil || !reflect.DeepEqual(res, want) {
		t.Errorf("SummariseMaps = %+v, %v; want %+v", res, err, want)
	}
	// f gets a fresh dst of N zeros for each input.
	var lens []int
	_, err = SummariseMaps("summary.x", draws, 0, func(dst []float64, r [][]float64) []float64 {
		for _, v := range dst {
			if v != 0 {
				t.Errorf("dst %v is not zeroed", dst)
			}
		}
		lens = append(lens, len(dst))
		dst[0] = 1
		return dst
	})
	if err != nil || !reflect.DeepEqual(lens, []int{3, 2}) {
		t.Errorf("dst lengths %v (%v), want [3 2]", lens, err)
	}

	// Exactly minDraws draws are enough; one fewer is not.
	if _, err := SummariseMaps("summary.var", draws, 4, mean); err == nil {
		t.Error("input 0 has 2 draws and 4 are needed, but no error")
	} else {
		errHas(t, "too few draws", err, "summary.var: input 0 has 2 draws, at least 4 needed")
	}
	few := [][][]float64{{{1}, {2}, {3}}, {{1}, {2}}}
	if _, err := SummariseMaps("summary.var", few, 2, mean); err != nil {
		t.Errorf("2 draws with minDraws 2: %v", err)
	}
	_, err = SummariseMaps("summary.var", few, 3, mean)
	errHas(t, "2 draws with minDraws 3", err, "summary.var: input 1 has 2 draws, at least 3 needed")
	// Without a minimum, one draw is still needed.
	_, err = SummariseMaps("summary.mean", [][][]float64{{{1}}, {}}, 0, mean)
	errHas(t, "no draws", err, "summary.mean: input 1 has 0 draws, at least 1 needed")
	if res, err := SummariseMaps("summary.mean", [][][]float64{{{5, 7}}}, -2, mean); err != nil || !reflect.DeepEqual(res, []Result{{Map: []float64{5, 7}}}) {
		t.Errorf("one draw, negative minDraws: %+v, %v", res, err)
	}
	if res, err := SummariseMaps("summary.mean", nil, 2, mean); err != nil || len(res) != 0 {
		t.Errorf("no inputs: %+v, %v", res, err)
	}
}

func TestCheckNoKeys(t *testing.T) {
	if err := CheckNoKeys("summary.mean", nil); err != nil {
		t.Errorf("nil config: %v", err)
	}
	if err := CheckNoKeys("summary.mean", Config{}); err != nil {
		t.Errorf("empty config: %v", err)
	}
	err := CheckNoKeys("summary.mean", Config{"window": 3.0})
	errHas(t, "a key", err, `summary.mean: unknown key "window"`)
}

// TestCloneDeepCopiesNestedValues: every level of nesting is copied, so
// changing, adding to or shrinking the clone's arrays and tables leaves
// the original as it was.
func TestCloneDeepCopiesNestedValues(t *testing.T) {
	orig := func() Config {
		return Config{
			"n": 1.5, "s": "x", "b": true, "i": int64(3),
			"list":  []any{1.0, []any{"a", "b"}, map[string]any{"k": []any{2.0}}},
			"table": map[string]any{"inner": map[string]any{"v": 4.0}, "arr": []any{true}},
			"tabs":  []map[string]any{{"m": []any{1.0}}, {"m": []any{2.0}}},
		}
	}
	c := orig()
	d := c.Clone()
	want := orig()
	want["tabs"] = []any{map[string]any{"m": []any{1.0}}, map[string]any{"m": []any{2.0}}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("clone %#v, want %#v", d, want)
	}
	d["list"].([]any)[0] = 9.0
	d["list"].([]any)[1].([]any)[0] = "z"
	d["list"].([]any)[2].(map[string]any)["k"].([]any)[0] = 9.0
	d["table"].(map[string]any)["added"] = 1.0
	d["table"].(map[string]any)["inner"].(map[string]any)["v"] = 9.0
	d["table"].(map[string]any)["arr"].([]any)[0] = false
	delete(d["table"].(map[string]any), "arr")
	d["tabs"].([]any)[1].(map[string]any)["m"].([]any)[0] = 9.0
	d["new"] = "key"
	d["n"] = 0.0
	if !reflect.DeepEqual(c, orig()) {
		t.Errorf("changing the clone changed the original: %#v", c)
	}
	if e := (Config{}).Clone(); e == nil || len(e) != 0 {
		t.Errorf("clone of an empty config: %#v", e)
	}
	if v := CloneValue(nil); v != nil {
		t.Errorf("CloneValue(nil) = %#v", v)
	}
}

// TestOnlyLeavesAllowedAlone: Only sorts its list of accepted keys for
// the message, not the caller's slice.
func TestOnlyLeavesAllowedAlone(t *testing.T) {
	allowed := []string{"window", "baseline", "stride"}
	err := Config{"windw": 1}.Only(allowed...)
	if err == nil || !strings.Contains(err.Error(), "accepted: baseline, stride, window") {
		t.Errorf("error %v", err)
	}
	if !slices.Equal(allowed, []string{"window", "baseline", "stride"}) {
		t.Errorf("Only reordered the caller's slice: %v", allowed)
	}
}

// TestQuote: short values as fmt shows them, long ones cut after
// QuoteLimit characters (runes, not bytes) with their length.
func TestQuote(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, c := range []struct {
		v    any
		want string
	}{
		{"win", `"win"`},
		{int64(641), "641"},
		{[]any{1, "a"}, "[1 a]"},
		{strings.Repeat("a", QuoteLimit), strconv.Quote(strings.Repeat("a", QuoteLimit))},
		{strings.Repeat("a", QuoteLimit+1), strconv.Quote(strings.Repeat("a", QuoteLimit)) + "… (81 bytes)"},
		{long, strconv.Quote(strings.Repeat("é", QuoteLimit)) + "… (200 bytes)"},
		{make([]int, 50), "[" + strings.Repeat("0 ", 39) + "0… (101 bytes)"}, // "[0 0 ... 0]" is 101 bytes
	} {
		if got := Quote(c.v); got != c.want {
			t.Errorf("Quote(%.20v) = %s, want %s", c.v, got, c.want)
		}
	}
	huge := strings.Repeat("x", 10<<20)
	for _, err := range []error{Config{huge: 1}.Only("stride"), func() error { _, err := (Config{"window": huge}).Int("window", 0); return err }()} {
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "… (10485760 bytes)") {
			t.Errorf("a 10 MB value: error of %d bytes", len(err.Error()))
		}
	}
}
