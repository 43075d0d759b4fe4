package recipe

import (
	"strconv"
	"strings"
)

// keyLines maps a key path (see pathKey) to the 1-based line where the key,
// table header or array element is first defined.
//
// BurntSushi/toml v1.6 records key positions only in unexported fields (and
// keeps one position per dotted key, so the entries of an array of tables
// overwrite each other), so the positions come from scanKeyLines, a small
// scanner over text that the toml library has already accepted.
type keyLines map[string]int

// pathKey joins a key path into a map key. Array elements are addressed by
// their 0-based index in decimal: ("posterior", "1", "members").
func pathKey(path ...string) string { return strings.Join(path, "\x1f") }

func (kl keyLines) set(path []string, line int) {
	k := pathKey(path...)
	if _, ok := kl[k]; !ok {
		kl[k] = line
	}
}

// scanKeyLines returns the line of every key, table header and array
// element of a TOML document. It assumes the document is valid TOML (it is
// only run after toml.Decode succeeded) and never fails: on anything it does
// not understand it skips to the next line.
func scanKeyLines(src string) keyLines {
	s := &lineScanner{src: src, line: 1, lines: keyLines{}, arrays: map[string]int{}}
	s.run()
	return s.lines
}

type lineScanner struct {
	src    string
	pos    int
	line   int
	lines  keyLines
	cur    []string       // the current table, with array indices
	arrays map[string]int // array-of-tables path (with indices of its parents) -> elements so far
}

func (s *lineScanner) eof() bool { return s.pos >= len(s.src) }

func (s *lineScanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

func (s *lineScanner) next() byte {
	c := s.src[s.pos]
	s.pos++
	if c == '\n' {
		s.line++
	}
	return c
}

func (s *lineScanner) hasPrefix(p string) bool { return strings.HasPrefix(s.src[s.pos:], p) }

// skipSpace skips blanks; with newlines it also skips newlines and comments.
func (s *lineScanner) skipSpace(newlines bool) {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			s.next()
		case newlines && c == '\n':
			s.next()
		case newlines && c == '#':
			s.skipLine()
		default:
			return
		}
	}
}

// skipLine skips to the start of the next line.
func (s *lineScanner) skipLine() {
	for !s.eof() {
		if s.next() == '\n' {
			return
		}
	}
}

func (s *lineScanner) run() {
	for !s.eof() {
		s.skipSpace(false)
		switch c := s.peek(); {
		case s.eof():
			return
		case c == '\n' || c == '#':
			s.skipLine()
		case c == '[':
			s.header()
			s.skipLine()
		default:
			line := s.line
			keys := s.keyPath()
			if len(keys) == 0 || s.peek() != '=' {
				s.skipLine()
				continue
			}
			s.next()
			path := s.define(s.cur, keys, line)
			s.value(path)
			s.skipLine()
		}
	}
}

// define records the lines of a (dotted) key under base and returns its path.
func (s *lineScanner) define(base, keys []string, line int) []string {
	path := append(append([]string{}, base...), keys...)
	for i := len(base) + 1; i <= len(path); i++ {
		s.lines.set(path[:i], line)
	}
	return path
}

// header reads [a.b] or [[a.b]] and makes it the current table.
func (s *lineScanner) header() {
	line := s.line
	s.next()
	array := s.peek() == '['
	if array {
		s.next()
	}
	keys := s.keyPath()
	if len(keys) == 0 {
		return
	}
	// Resolve the parents: a parent that is an array of tables means its
	// last element.
	var path []string
	for i, k := range keys {
		path = append(path, k)
		if i == len(keys)-1 {
			break
		}
		if n := s.arrays[pathKey(path...)]; n > 0 {
			path = append(path, strconv.Itoa(n-1))
		}
		s.lines.set(path, line)
	}
	if array {
		k := pathKey(path...)
		n := s.arrays[k]
		s.arrays[k] = n + 1
		s.lines.set(path, line)
		path = append(path, strconv.Itoa(n))
	}
	s.lines.set(path, line)
	s.cur = path
}

// keyPath reads a dotted key (bare, "basic" or 'literal' parts) and the
// blanks after it.
func (s *lineScanner) keyPath() []string {
	var keys []string
	for {
		s.skipSpace(false)
		var k string
		switch c := s.peek(); {
		case c == '"':
			k = s.basicString()
		case c == '\'':
			k = s.literalString()
		case isBare(c):
			start := s.pos
			for !s.eof() && isBare(s.peek()) {
				s.next()
			}
			k = s.src[start:s.pos]
		default:
			return keys
		}
		keys = append(keys, k)
		s.skipSpace(false)
		if s.peek() != '.' {
			return keys
		}
		s.next()
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// basicString reads "..." and returns its content with simple escapes
// resolved (enough for keys).
func (s *lineScanner) basicString() string {
	s.next()
	var b strings.Builder
	for !s.eof() {
		c := s.next()
		switch c {
		case '"':
			return b.String()
		case '\\':
			if !s.eof() {
				e := s.next()
				switch e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(e)
				}
			}
		case '\n':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (s *lineScanner) literalString() string {
	s.next()
	start := s.pos
	for !s.eof() {
		if c := s.next(); c == '\'' || c == '\n' {
			return s.src[start : s.pos-1]
		}
	}
	return s.src[start:]
}

// value skips one value, recording the keys of inline tables and the
// elements of arrays under path.
func (s *lineScanner) value(path []string) {
	s.skipSpace(false)
	switch {
	case s.hasPrefix(`"""`):
		s.pos += 3
		for !s.eof() && !s.hasPrefix(`"""`) {
			if s.next() == '\\' && !s.eof() {
				s.next()
			}
		}
		s.pos += 3
		for s.peek() == '"' { // up to two quotes may end the content
			s.next()
		}
	case s.hasPrefix(`'''`):
		s.pos += 3
		for !s.eof() && !s.hasPrefix(`'''`) {
			s.next()
		}
		s.pos += 3
		for s.peek() == '\'' {
			s.next()
		}
	case s.peek() == '"':
		s.basicString()
	case s.peek() == '\'':
		s.literalString()
	case s.peek() == '[':
		s.next()
		for i := 0; ; i++ {
			s.skipSpace(true)
			if s.eof() || s.peek() == ']' {
				break
			}
			el := append(append([]string{}, path...), strconv.Itoa(i))
			s.lines.set(el, s.line)
			start := s.pos
			s.value(el)
			s.skipSpace(true)
			if s.peek() == ',' {
				s.next()
			} else if s.pos == start {
				break // not understood: give up on this array
			}
		}
		if s.peek() == ']' {
			s.next()
		}
	case s.peek() == '{':
		s.next()
		for {
			s.skipSpace(true)
			if s.eof() || s.peek() == '}' {
				break
			}
			line := s.line
			keys := s.keyPath()
			if len(keys) == 0 || s.peek() != '=' {
				break
			}
			s.next()
			s.value(s.define(path, keys, line))
			s.skipSpace(true)
			if s.peek() == ',' {
				s.next()
			}
		}
		if s.peek() == '}' {
			s.next()
		}
	default: // number, bool, date-time
		for !s.eof() {
			switch s.peek() {
			case ',', ']', '}', '\n', '#':
				return
			}
			s.next()
		}
	}
}
