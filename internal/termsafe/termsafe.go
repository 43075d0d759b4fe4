package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character that a terminal acts on written
// as a Go escape: newline and carriage return as \n and \r, the other C0
// controls, DEL and the C1 controls (ESC, which starts every ANSI
// sequence, is \x1b; U+009B, the one-character CSI, is \u009b), the
// Unicode line and paragraph separators and the bidirectional overrides
// and isolates (which reorder what follows them on screen), and each
// byte of invalid UTF-8 as \xNN (a terminal may read a lone 0x9b as
// CSI). Tab and every other character stay as they are, backslashes
// included, so that ordinary text and paths are unchanged; s comes back
// as is when it has nothing to escape.
func Escape(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == utf8.RuneError:
			b.WriteString(s[i : i+n]) // a real U+FFFD
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unsafeRune(r) && r < 0x80:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // '\u009b'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Clean reports whether s has nothing that Escape would escape (Escape(s)
// == s): no control character but tab, no line or paragraph separator,
// no bidirectional control, and valid UTF-8 (a real U+FFFD is clean).
func Clean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r != utf8.RuneError && unsafeRune(r) {
			return false
		}
		i += n
	}
	return true
}

// unsafeRune reports whether a terminal may act on r (see Escape);
// utf8.RuneError counts, so that invalid bytes are found (a real U+FFFD
// is written as it is).
func unsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
