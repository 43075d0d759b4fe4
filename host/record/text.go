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
// GB2312 code (both bytes 0xA1..0xFE), else Latin-1. guessed is true when
// a non-UTF-8 encoding was detected rather than given.
func decodeText(b []byte, enc string) (text, used string, guessed bool, err error) {
	b = trimBOM(b)
	switch strings.ToLower(strings.ReplaceAll(enc, "-", "")) {
	case "":
		if utf8.Valid(b) {
			return string(b), "utf-8", false, nil
		}
		if looksGB2312(b) {
			s, err := simplifiedchinese.GBK.NewDecoder().Bytes(b)
			if err == nil {
				return string(s), "gbk", true, nil
			}
		}
		s, _ := charmap.ISO8859_1.NewDecoder().Bytes(b)
		return string(s), "latin1", true, nil
	case "utf8":
		if !utf8.Valid(b) {
			return "", "", false, fmt.Errorf("not valid UTF-8 (accepted encodings: utf-8, latin1, gbk)")
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
	}
	return "", "", false, fmt.Errorf("unknown encoding %q (accepted: utf-8, latin1, gbk)", enc)
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
