package record

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// decodeText returns b as UTF-8 text and the name of the encoding it was
// read in. enc "" detects: UTF-8 when b is valid UTF-8 (a leading BOM is
// dropped), else GBK when every byte >= 0x80 pairs with the next into a
// GB2312 code (both bytes 0xA1..0xFE), else Windows-1251 when the bytes
// >= 0x80 are letters of its Cyrillic block (0xC0..0xFF, 0xA8, 0xB8) and
// most stand beside another (looksCyrillic: words written wholly in
// them), else Latin-1. Text that passes both tests is Windows-1251 when
// it has 4 or more bytes >= 0x80: GBK's bytes are 0xC0 or more about 6
// times in 10, so a Chinese text passes the Cyrillic test by chance with
// a probability near 0.6^n for n such bytes (0.13 for 4), while short
// Cyrillic words pair up as GB2312 codes often ("Ёлка" is A8 EB EA E0).
// guessed is true when a non-UTF-8 encoding was detected rather than
// given.
func decodeText(b []byte, enc string) (text, used string, guessed bool, err error) {
	b = trimBOM(b)
	switch strings.ToLower(strings.ReplaceAll(enc, "-", "")) {
	case "":
		if utf8.Valid(b) {
			return string(b), "utf-8", false, nil
		}
		cyr := looksCyrillic(b)
		if looksGB2312(b) && !accentsInWords(b) && !(cyr && highBytes(b) >= 4) {
			s, err := simplifiedchinese.GBK.NewDecoder().Bytes(b)
			if err == nil {
				return string(s), "gbk", true, nil
			}
		}
		if cyr {
			s, _ := charmap.Windows1251.NewDecoder().Bytes(b)
			return string(s), "cp1251", true, nil
		}
		s, _ := charmap.ISO8859_1.NewDecoder().Bytes(b)
		return string(s), "latin1", true, nil
	case "utf8":
		if !utf8.Valid(b) {
			return "", "", false, fmt.Errorf("not valid UTF-8 (accepted encodings: %s)", encodings)
		}
		return string(b), "utf-8", false, nil
	case "latin1", "iso88591":
		s, _ := charmap.ISO8859_1.NewDecoder().Bytes(b)
		return string(s), "latin1", false, nil
	case "gbk", "gb2312", "cp936":
		s, err := simplifiedchinese.GBK.NewDecoder().Bytes(b)
		if err != nil {
			return "", "", false, fmt.Errorf("not valid GBK: %v", err)
		}
		return string(s), "gbk", false, nil
	case "cp1251", "windows1251":
		s, _ := charmap.Windows1251.NewDecoder().Bytes(b)
		return string(s), "cp1251", false, nil
	}
	return "", "", false, fmt.Errorf("unknown encoding %q (accepted: %s)", enc, encodings)
}

// encodings are the names decodeText accepts.
const encodings = "utf-8, latin1, gbk, cp1251"

// looksCyrillic reports whether b has bytes >= 0x80, all of them letters
// of Windows-1251's Cyrillic block (0xC0..0xFF, Ё 0xA8, ё 0xB8), and at
// least half of the words that hold such bytes are mostly made of them
// (two thirds of their letters or more; a word is a run of ASCII letters
// and such bytes): Cyrillic words are written wholly in them, while
// Latin-1 text has accented letters here and there inside ASCII words,
// even two side by side ("Estação": 2 of 7).
func looksCyrillic(b []byte) bool {
	letter := func(c byte) bool { return c >= 0xC0 || c == 0xA8 || c == 0xB8 }
	ascii := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	words, cyrillic := 0, 0
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x80 && !letter(c) {
			return false
		}
		if !letter(c) && !ascii(c) {
			i++
			continue
		}
		high, all := 0, 0
		for ; i < len(b) && (letter(b[i]) || ascii(b[i])); i++ {
			all++
			if b[i] >= 0x80 {
				high++
			}
		}
		if high > 0 {
			words++
			if 3*high >= 2*all {
				cyrillic++
			}
		}
	}
	return words > 0 && 2*cyrillic >= words
}

// accentsInWords reports whether most runs of bytes >= 0x80 in b stand
// inside ASCII words, an ASCII letter on each side ("Esta\xe7\xe3o"): the
// accented letters of Latin-1 text. Chinese text in GBK puts its
// characters in runs of their own, beside digits, punctuation or ASCII on
// one side at most ("110kV\xb1\xe4\xb5\xe7\xd5\xbe"); a pair of Latin-1
// accents inside a word is a valid GB2312 code, so looksGB2312 alone
// cannot tell them apart.
func accentsInWords(b []byte) bool {
	ascii := func(i int) bool {
		return i >= 0 && i < len(b) && (b[i] >= 'a' && b[i] <= 'z' || b[i] >= 'A' && b[i] <= 'Z')
	}
	runs, inside := 0, 0
	for i := 0; i < len(b); i++ {
		if b[i] < 0x80 {
			continue
		}
		j := i
		for j < len(b) && b[j] >= 0x80 {
			j++
		}
		runs++
		if ascii(i-1) && ascii(j) {
			inside++
		}
		i = j
	}
	return runs > 0 && 2*inside > runs
}

// highBytes counts the bytes >= 0x80 of b.
func highBytes(b []byte) int {
	n := 0
	for _, c := range b {
		if c >= 0x80 {
			n++
		}
	}
	return n
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// looksGB2312 reports whether b has non-ASCII bytes and every one of them
// pairs with the next into a GB2312 code (both bytes in 0xA1..0xFE).
func looksGB2312(b []byte) bool {
	seen := false
	for i := 0; i < len(b); i++ {
		if b[i] < 0x80 {
			continue
		}
		if i+1 >= len(b) || b[i] < 0xA1 || b[i] > 0xFE || b[i+1] < 0xA1 || b[i+1] > 0xFE {
			return false
		}
		seen = true
		i++
	}
	return seen
}

// splitLines splits text at "\n", dropping a "\r" before it; a last empty
// line (the text ends with a line end) is dropped.
func splitLines(text string) []string {
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
