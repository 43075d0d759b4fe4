package record

import "testing"

// TestLooksCyrillic: Windows-1251 Cyrillic words are told from Latin-1
// text by their letters standing beside one another: at least half of
// the bytes >= 0x80 must have such a neighbour, every one must be a
// letter of the Cyrillic block (0xC0..0xFF, 0xA8, 0xB8), and a letter
// at either end of the text is looked at without reading past it.
func TestLooksCyrillic(t *testing.T) {
	for _, c := range []struct {
		name string
		b    string
		want bool
	}{
		{"a Cyrillic word", cp1251("Подстанция"), true},
		{"Ё and ё, 0xA8 and 0xB8", cp1251("Ёё"), true},
		{"Latin-1, one accent in a word", "Gen\xe8ve", false},
		{"Latin-1, accents apart", "caf\xe9 na\xefve", false},
		{"ASCII only", "STATION,RELAY", false},
		{"exactly half beside another", "\xc0\xc1 a \xe9 b \xea", true},
		{"under half beside another", "\xc0\xc1 a \xe9 b \xea c \xeb", false},
		{"a lone letter first", "\xc0x", false},
		{"a lone letter last", "x\xc0", false},
		{"a pair at the very end", "ab\xc0\xc1", true},
		{"a pair at the very start", "\xc0\xc1ab", true},
		{"a byte outside the letters (0x99)", cp1251("Подстанция") + "\x99", false},
		{"0xA7, beside 0xA8, is no letter", "\xa7\xa8", false},
		{"0x80, the first high byte, is no letter", cp1251("Подстанция") + "\x80", false},
	} {
		if got := looksCyrillic([]byte(c.b)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Text that both GB2312 and Windows-1251 could be: Windows-1251 from
	// 4 bytes >= 0x80 up, else GBK.
	for _, c := range []struct{ b, text, enc string }{
		{cp1251("Ёлка") + ",R1", "Ёлка,R1", "cp1251"},                    // A8 EB EA E0: two GB2312 codes
		{cp1251("Ua_1СШ-110_ТН_110кВ"), "Ua_1СШ-110_ТН_110кВ", "cp1251"}, // as a field recorder writes
		{"\xc4\xe3,R1", "你,R1", "gbk"},                                   // C4 E3: one character, both tests pass
		{"\xb1\xe4\xb5\xe7\xd5\xbe", "变电站", "gbk"},                       // B1: no Cyrillic letter
	} {
		if text, used, guessed, err := decodeText([]byte(c.b), ""); err != nil || text != c.text || used != c.enc || !guessed {
			t.Errorf("decodeText of % x: %q %q %v %v; want %q in %s", c.b, text, used, guessed, err, c.text, c.enc)
		}
	}
	if _, _, _, err := decodeText([]byte("x"), "koi8-r"); err == nil {
		t.Error("an unknown encoding: no error")
	}
}
