package termsafe

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// printable reports whether a terminal shows s as one line of plain
// text: valid UTF-8 and no character Escape escapes (tab aside).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069) {
			return false
		}
	}
	return true
}

// check: Escape(s) is printable; Go's own unquoting of it gives s back
// (when s has no backslash or double quote, which Escape leaves alone);
// and a printable s is left as it is.
func check(t *testing.T, s string) {
	t.Helper()
	e := Escape(s)
	if !printable(e) {
		t.Errorf("Escape(%q) = %q, which a terminal acts on", s, e)
	}
	if !strings.ContainsAny(s, `\"`) {
		if back, err := strconv.Unquote(`"` + e + `"`); err != nil || back != s {
			t.Errorf("Escape(%q) = %q does not unquote to the input: %q, %v", s, e, back, err)
		}
	}
	if printable(s) && e != s {
		t.Errorf("Escape changed printable text %q to %q", s, e)
	}
	if Clean(s) != (e == s) {
		t.Errorf("Clean(%q) = %v, but Escape gives %q", s, Clean(s), e)
	}
}

// TestEscape: a fake host line and a cursor move come out as one inert
// line; ordinary text, tabs, backslashes, non-ASCII letters and U+FFFD
// stay as they are.
func TestEscape(t *testing.T) {
	fake := "\x1b[2K\ruaxai: all good\nuaxai: run complete\x1b]0;title\x07"
	if got, want := Escape(fake), `\x1b[2K\ruaxai: all good\nuaxai: run complete\x1b]0;title\x07`; got != want {
		t.Errorf("Escape(%q) = %q, want %q", fake, got, want)
	}
	for _, s := range []string{
		fake, "", "plain", "tab\tseparated", `C:\path\x1b`, "Grüße, 東京, \ufffd", "\u009b31m", "\xff\x9bbad utf-8",
		"\u202egnp.exe", "a\u2028b", "nul\x00del\x7f", "\r\n",
	} {
		check(t, s)
	}
}

// FuzzEscape: Escape's output is printable, unquotes to its input, and
// leaves printable input alone.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"\x1b[2K\ruaxai: all good", "\nuaxai: all good", "ok", "\xc2\x9b", "\xe2\x80\xae", "\xff", "\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(check)
}
