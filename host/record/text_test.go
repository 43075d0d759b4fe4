package record

import "testing"

// TestLooksCyrillic: Windows-1251 Cyrillic words are told from Latin-1
// text by being written mostly in its letters: at least half of the words
// that hold bytes >= 0x80 must have two thirds of their letters or more
// among them, and every such byte must be a letter of the Cyrillic block
// (0xC0..0xFF, 0xA8, 0xB8). Portuguese "ção" puts two accented letters
// side by side and is still Latin-1 (issue 37).
func TestLooksCyrillic(t *testing.T) {
	// Accents inside ASCII words are Latin-1 even where they pair into
	// GB2312 codes; Chinese runs stand apart.
	for _, c := range []struct {
		b    string
		want bool
	}{
		{"Esta\xe7\xe3o de Medi\xe7\xe3o", true},
		{"110kV\xb1\xe4\xb5\xe7\xd5\xbe", false},
		{"\xc4\xe3,R1", false},
		{"caf\xe9s A\xe9b", true},
		{"A\xe9b \xc4\xe3 \xc4\xe3", false}, // one of three runs inside a word
		{"ASCII", false},
	} {
		if got := accentsInWords([]byte(c.b)); got != c.want {
			t.Errorf("accentsInWords(%q): %v, want %v", c.b, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		b    string
		want bool
	}{
		{"a Cyrillic word", cp1251("Подстанция"), true},
		{"Ё and ё, 0xA8 and 0xB8", cp1251("Ёё"), true},
		{"Latin-1, one accent in a word", "Gen\xe8ve", false},
		{"Latin-1, accents apart", "caf\xe9 na\xefve", false},
		{"Latin-1, two accents side by side", "Esta\xe7\xe3o de Medi\xe7\xe3o", false},
		{"ASCII only", "STATION,RELAY", false},
		{"two thirds of a word", "\xc0\xc1a", true},
		{"under two thirds", "\xc0\xc1ab", false},
		{"one word of two Cyrillic", "\xc0\xc1 caf\xe9", true},
		{"one word of three", "\xc0\xc1 caf\xe9 na\xefve", false},
		{"a lone letter first", "\xc0x", false},
		{"a lone letter last", "x\xc0", false},
		{"a word at the very end", "ab \xc0\xc1\xc2", true},
		{"a word at the very start", "\xc0\xc1\xc2 ab", true},
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
