package recipe

import (
	"strconv"
	"strings"
)

// keyLines maps a key path to the 1-based line where the key, table header
// or array element is first defined. Array elements are addressed by their
// 0-based index in decimal: ("posterior", "1", "members").
//
// BurntSushi/toml v1.6 records key positions only in unexported fields (and
// keeps one position per dotted key, so the entries of an array of tables
// overwrite each other), so the positions come from scanKeyLines, a small
// scanner over text that the toml library has already accepted.
//
// The paths form a tree: each node is one key under its parent, so a path
// costs one map entry per key and no key path is ever copied or joined.
// (A map from joined paths costs the square of the depth: a value nested
// 20,000 deep took gigabytes.) The zero keyLines (and a nil one) is empty.
type keyLines struct {
	child map[keyEdge]int32 // (parent node, key) -> node; node 0 is the root
	line  []int             // node -> line; 0: a node only on the way to defined ones
}

type keyEdge struct {
	parent int32
	key    string
}

func newKeyLines() *keyLines { return &keyLines{child: map[keyEdge]int32{}, line: []int{0}} }

// node returns the node of key under parent, made if it is new.
func (kl *keyLines) node(parent int32, key string) int32 {
	e := keyEdge{parent, key}
	if n, ok := kl.child[e]; ok {
		return n
	}
	n := int32(len(kl.line))
	kl.child[e] = n
	kl.line = append(kl.line, 0)
	return n
}

// set records line for node n unless it has one.
func (kl *keyLines) set(n int32, line int) {
	if kl.line[n] == 0 {
		kl.line[n] = line
	}
}

// get returns the line of path, 0 if it is not defined in the file.
func (kl *keyLines) get(path ...string) int {
	if kl == nil || len(path) == 0 {
		return 0
	}
	var n int32
	for _, k := range path {
		var ok bool
		if n, ok = kl.child[keyEdge{n, k}]; !ok {
			return 0
		}
	}
	return kl.line[n]
}

// nearest returns the line of path or, if it is not in the file, of its
// nearest ancestor that is; 0 if none is.
func (kl *keyLines) nearest(path []string) int {
	if kl == nil {
		return 0
	}
	var n int32
	best := 0
	for _, k := range path {
		var ok bool
		if n, ok = kl.child[keyEdge{n, k}]; !ok {
			break
		}
		if l := kl.line[n]; l > 0 {
			best = l
		}
	}
	return best
}

// scanKeyLines returns the line of every key, table header and array
// element of a TOML document. It assumes the document is valid TOML (it is
// only run after toml.Decode succeeded) and never fails: on anything it does
// not understand it skips to the next line.
func scanKeyLines(src string) *keyLines {
	s := &lineScanner{cursor: cursor{src: src, line: 1}, lines: newKeyLines(), arrays: map[int32]int{}}
	s.run()
	return s.lines
}

type lineScanner struct {
	cursor
	lines  *keyLines
	cur    int32         // the node of the current table (its path has array indices)
	arrays map[int32]int // node of an array of tables -> elements so far
}

// cursor is a position in a TOML text, with its line (from 1).
type cursor struct {
	src  string
	pos  int
	line int
}

func (s *cursor) eof() bool { return s.pos >= len(s.src) }

// peek is the next byte, or 0 at the end.
func (s *cursor) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

// next consumes and returns the next byte.
func (s *cursor) next() byte {
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
			s.value(s.define(s.cur, keys, line))
			s.skipLine()
		}
	}
}

// define records the lines of a (dotted) key under base and returns its node.
func (s *lineScanner) define(base int32, keys []string, line int) int32 {
	n := base
	for _, k := range keys {
		n = s.lines.node(n, k)
		s.lines.set(n, line)
	}
	return n
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
	var n int32
	for i, k := range keys {
		n = s.lines.node(n, k)
		if i == len(keys)-1 {
			break
		}
		if c := s.arrays[n]; c > 0 {
			n = s.lines.node(n, strconv.Itoa(c-1))
		}
		s.lines.set(n, line)
	}
	if array {
		c := s.arrays[n]
		s.arrays[n] = c + 1
		s.lines.set(n, line)
		n = s.lines.node(n, strconv.Itoa(c))
	}
	s.lines.set(n, line)
	s.cur = n
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
// elements of arrays under node n.
func (s *lineScanner) value(n int32) {
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
			el := s.lines.node(n, strconv.Itoa(i))
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
			s.value(s.define(n, keys, line))
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
