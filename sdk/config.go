package sdk

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Config is a plugin's table from the recipe, as decoded TOML values
// (string, bool, int64, float64, []any, map[string]any). Over the wire it
// travels as JSON, so integers may arrive as float64; the accessors accept
// both.
type Config map[string]any

// Only returns an error naming the first key of c that is not in allowed,
// and listing what would have been accepted.
func (c Config) Only(allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	var bad []string
	for k := range c {
		if !ok[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	accepted := slices.Sorted(slices.Values(allowed)) // the caller's slice stays as it is
	return fmt.Errorf("unknown key %s (accepted: %s)", Quote(bad[0]), strings.Join(accepted, ", "))
}

// QuoteLimit is the most characters of a value that Quote shows.
const QuoteLimit = 80

// Quote formats a value for an error message: a string in Go quotes,
// anything else as %v, cut after QuoteLimit characters with "…" and the
// full length in bytes, so that a 10 MB value never becomes a 10 MB
// message.
func Quote(v any) string {
	s, quoted := fmt.Sprint(v), false
	if str, ok := v.(string); ok {
		s, quoted = str, true
	}
	n := len(s)
	cut := false
	if utf8.RuneCountInString(s) > QuoteLimit {
		i, r := 0, 0
		for i = range s {
			if r == QuoteLimit {
				break
			}
			r++
		}
		s, cut = s[:i], true
	}
	if quoted {
		s = strconv.Quote(s)
	}
	if cut {
		s += fmt.Sprintf("… (%d bytes)", n)
	}
	return s
}

// Float returns key as a float64, or def if it is absent.
func (c Config) Float(key string, def float64) (float64, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("key %q: %v is not a finite number", key, x)
		}
		return x, nil
	case float32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	}
	return 0, fmt.Errorf("key %q: want a number, got %T %s", key, v, Quote(v))
}

// Int returns key as an int, or def if it is absent. A float value must be
// integral.
func (c Config) Int(key string, def int) (int, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case int64:
		return int(x), nil
	case int:
		return x, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("key %q: want an integer, got %v", key, x)
		}
		return int(x), nil
	}
	return 0, fmt.Errorf("key %q: want an integer, got %T %s", key, v, Quote(v))
}

// String returns key as a string, or def if it is absent.
func (c Config) String(key, def string) (string, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("key %q: want a string, got %T %s", key, v, Quote(v))
	}
	return s, nil
}

// Bool returns key as a bool, or def if it is absent.
func (c Config) Bool(key string, def bool) (bool, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("key %q: want true or false, got %T %s", key, v, Quote(v))
	}
	return b, nil
}

// IntRange returns key as an int in [lo, hi], or def if absent.
func (c Config) IntRange(key string, def, lo, hi int) (int, error) {
	v, err := c.Int(key, def)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("key %q: %d is out of range (accepted: %d..%d)", key, v, lo, hi)
	}
	return v, nil
}

// SummariseMaps applies f to every input of a batch of draws and returns
// the maps as Results: the batch plumbing of a map summary. f writes the
// map of one input's draws r (S x N) into dst (N values) and returns it.
// An input with fewer than minDraws draws is an error naming the summary.
func SummariseMaps(id string, draws [][][]float64, minDraws int, f func(dst []float64, r [][]float64) []float64) ([]Result, error) {
	out := make([]Result, len(draws))
	for i, d := range draws {
		if len(d) < max(minDraws, 1) {
			return nil, fmt.Errorf("%s: input %d has %d draws, at least %d needed", id, i, len(d), max(minDraws, 1))
		}
		out[i].Map = f(make([]float64, len(d[0])), d)
	}
	return out, nil
}

// CheckNoKeys is the Check of a plugin without configuration: any key is an
// error naming the plugin.
func CheckNoKeys(id string, cfg Config) error {
	if err := cfg.Only(); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	return nil
}

// Clone returns a deep copy of c, with arrays as []any and nested tables as
// map[string]any (the types Config documents; a TOML decoder may give
// []map[string]any for an array of tables).
func (c Config) Clone() Config {
	out := make(Config, len(c))
	for k, v := range c {
		out[k] = CloneValue(v)
	}
	return out
}

// CloneValue deep-copies one config value as Clone does.
func CloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = CloneValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = CloneValue(e)
		}
		return a
	case []map[string]any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = CloneValue(e)
		}
		return a
	}
	return v
}

// CheckDraws is the Check of a posterior that takes any number of draws
// from 1 up: an error naming the plugin for fewer.
func CheckDraws(id string, draws int) error {
	if draws < 1 {
		return fmt.Errorf("%s: key %q: %d (accepted: >= 1)", id, "draws", draws)
	}
	return nil
}
