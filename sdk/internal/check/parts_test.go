package check

import (
	"strings"
	"testing"
)

// TestPart: a whole fit is 0 of 0, a part is 0 <= part < parts <=
// MaxParts; every refusal names the numbers and what is accepted.
func TestPart(t *testing.T) {
	for _, c := range []struct {
		part, parts int64
		want        string // "" accepted
	}{
		{0, 0, ""},
		{0, 1, ""},
		{1, 2, ""},
		{MaxParts - 1, MaxParts, ""},
		{1, 0, "bad request: part = 1 of a whole fit (parts = 0; set parts to ask for a part)"},
		{-1, 0, "bad request: part = -1 of a whole fit"},
		{2, 2, "bad request: part = 2 of 2 parts (accepted: 0..1)"},
		{-1, 2, "bad request: part = -1 of 2 parts (accepted: 0..1)"},
		{0, -1, "bad request: parts = -1 (accepted: 0 for a whole fit, or 1..100000)"},
		{0, MaxParts + 1, "bad request: parts = 100001 (accepted: 0 for a whole fit, or 1..100000)"},
	} {
		err := Part(c.part, c.parts)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("part %d of %d: %v", c.part, c.parts, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("part %d of %d: %v, want %q", c.part, c.parts, err, c.want)
		}
	}
}

// TestParts: an answer is 0..MaxParts.
func TestParts(t *testing.T) {
	for _, k := range []int64{0, 1, 5, MaxParts} {
		if err := Parts(k); err != nil {
			t.Errorf("%d parts: %v", k, err)
		}
	}
	for _, k := range []int64{-1, MaxParts + 1, 1e9} {
		if err := Parts(k); err == nil || !strings.Contains(err.Error(), "parts (accepted: 0..100000; 0 or 1 for a fit that is not parted)") {
			t.Errorf("%d parts: %v", k, err)
		}
	}
}

// TestUnparted: a posterior that is not parted takes whole fits only.
func TestUnparted(t *testing.T) {
	if err := Unparted(0, 0); err != nil {
		t.Errorf("a whole fit: %v", err)
	}
	for _, c := range [][2]int64{{0, 1}, {2, 3}} {
		if err := Unparted(c[0], c[1]); err == nil || !strings.Contains(err.Error(), "not parted") {
			t.Errorf("part %d of %d: %v", c[0], c[1], err)
		}
	}
}
