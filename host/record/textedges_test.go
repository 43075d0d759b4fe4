package record

import "testing"

// TestDecodeTextDetectBounds checks the encoding detection at the bounds
// of its byte classes: the ASCII letters a..z and A..Z (z, Z and A
// included) make words with an accented letter Latin-1, not Cyrillic;
// GB2312 codes take both bytes in 0xA1..0xFE inclusive; a byte 0x80, or
// a high byte with no byte after it, is no GB2312 code; Latin-1 accents
// inside a word, from the word's first letter on, are not GBK; a text
// with as many high-byte runs inside words as beside them is GBK.
func TestDecodeTextDetectBounds(t *testing.T) {
	for _, c := range []struct{ b, text, enc string }{
		{"zz\xe9", "zzé", "latin1"},
		{"ZZ\xe9", "ZZé", "latin1"},
		{"AA\xe9", "AAé", "latin1"},
		{"A\xe7\xe3o", "Ação", "latin1"},
		{"Vaz\xe7\xe3o", "Vazção", "latin1"},
		{"CAL\xc7\xc3Z", "CALÇÃZ", "latin1"},
		{"1\xa1\xa3", "1。", "gbk"},
		{"1\xb0\xa1", "1啊", "gbk"},
		{"1\xb0\xfe", "1剥", "gbk"},
		{"abc\xb1", "abc±", "latin1"},
		{"1\x80 \xb1\xe4", "1\u0080 ±ä", "latin1"},
		{"a\xb1\xe4b 1\xb5\xe7", "a变b 1电", "gbk"},
	} {
		text, used, guessed, err := decodeText([]byte(c.b), "")
		if err != nil || text != c.text || used != c.enc || !guessed {
			t.Errorf("decodeText(%q): %q %s %v %v, want %q in %s (guessed)", c.b, text, used, guessed, err, c.text, c.enc)
		}
	}
	// A lead byte of 0xFE is in the GB2312 byte range: GBK is chosen.
	if _, used, _, err := decodeText([]byte("1\xfe\xa1"), ""); err != nil || used != "gbk" {
		t.Errorf("decodeText of a 0xFE lead byte: %s %v, want gbk", used, err)
	}
}

// TestDecodeTextBOM checks that a UTF-8 byte order mark (EF BB BF) is
// dropped, also when it is all the text, and that bytes differing from it
// in any one position are kept.
func TestDecodeTextBOM(t *testing.T) {
	for _, c := range []struct{ b, enc, text string }{
		{"\xef\xbb\xbfabc", "", "abc"},
		{"\xef\xbb\xbf", "", ""},
		{"\xef\xbb\xbfabc", "utf-8", "abc"},
		{"x\xbb\xbfabc", "latin1", "x»¿abc"},
		{"\xefx\xbfabc", "latin1", "ïx¿abc"},
		{"\xef\xbbxabc", "latin1", "ï»xabc"},
	} {
		if text, _, _, err := decodeText([]byte(c.b), c.enc); err != nil || text != c.text {
			t.Errorf("decodeText(%q, %q): %q %v, want %q", c.b, c.enc, text, err, c.text)
		}
	}
}

// TestHighByteRuns checks the byte classes of the detection helpers: a
// run of bytes >= 0x80 includes 0x80, so an ASCII letter on each side of
// "\x80" or "\xe9\x80" puts the run inside a word; highBytes counts 0x80.
func TestHighByteRuns(t *testing.T) {
	for _, b := range []string{"a\x80b", "a\xe9\x80b"} {
		if !accentsInWords([]byte(b)) {
			t.Errorf("accentsInWords(%q): false, want true (one run, inside a word)", b)
		}
	}
	if n := highBytes([]byte("\x80\x81\x7fa\xff")); n != 3 {
		t.Errorf("highBytes: %d, want 3", n)
	}
}
