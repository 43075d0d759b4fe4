package recipe

import (
	"fmt"
	"strings"
)

// Bounds on the recipe text, checked before the TOML library reads it
// (checkText). A real recipe is a few KiB, nests four or five levels
// ([[model.layers]] and a key; a plugin's inline table) and has keys of a
// few dozen bytes; the bounds are far above that and far below what costs
// memory. BurntSushi/toml keeps a table of every key by its whole path, so
// its memory grows as the product of the key path's length and the number
// of keys, and with the square of the nesting of inline tables and dotted
// keys (a 20 KB recipe of inline tables nested 5,000 deep took 1.1 GB).
const (
	// MaxRecipeSize is the largest recipe file, in bytes.
	MaxRecipeSize = 1 << 20
	// MaxDepth is the deepest nesting: the parts of a table header
	// ([a.b.c] is 3), of a dotted key, and each array and inline table a
	// value opens, added up along the path from the top level.
	MaxDepth = 32
	// MaxKeyPath is the longest key path in bytes: the names of the
	// tables, keys and inline-table keys along a path, added up.
	MaxKeyPath = 1024
)

// checkText refuses a recipe text beyond MaxRecipeSize, MaxDepth or
// MaxKeyPath with an error naming the file and the line. It reads the
// text as TOML only as far as it must (strings, comments, keys, brackets)
// and never fails on a syntax error: that is the TOML library's to report.
func checkText(name string, src []byte) error {
	if err := checkSize(name, int64(len(src))); err != nil {
		return err
	}
	s := &nestScanner{src: src, line: 1}
	if err := s.run(); err != nil {
		return fmt.Errorf("recipe %s: line %d: %w", name, s.line, err)
	}
	return nil
}

func checkSize(name string, size int64) error {
	if size > MaxRecipeSize {
		return fmt.Errorf("recipe %s: the file is %d bytes, above the bound of %d (1 MiB); a recipe is a few KiB: keep long data in files that a key names", name, size, MaxRecipeSize)
	}
	return nil
}

// nestScanner follows the nesting of a TOML text: the table of the last
// header, and, inside a value, a stack of the arrays and inline tables
// open.
type nestScanner struct {
	src  []byte
	pos  int
	line int
	// the current table's depth and key bytes
	tableDepth, tableBytes int
	stack                  []nestFrame
}

// nestFrame is an open array or inline table.
type nestFrame struct {
	kind                 byte // '[' or '{'
	baseDepth, baseBytes int  // of the array's elements, or of the inline table itself
	depth, bytes         int  // of the values in it: the elements, or the inline table's current key
}

func (s *nestScanner) eof() bool { return s.pos >= len(s.src) }

func (s *nestScanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

func (s *nestScanner) advance() byte {
	c := s.src[s.pos]
	s.pos++
	if c == '\n' {
		s.line++
	}
	return c
}

func (s *nestScanner) skipBlanks() {
	for !s.eof() && (s.peek() == ' ' || s.peek() == '\t' || s.peek() == '\r') {
		s.pos++
	}
}

func (s *nestScanner) skipLine() {
	for !s.eof() && s.peek() != '\n' {
		s.pos++
	}
}

func depthErr(depth int) error {
	return fmt.Errorf("nesting %d levels deep, above the bound of %d (tables, dotted keys, arrays and inline tables added up); a recipe nests a few levels: flatten the table or the value", depth, MaxDepth)
}

func keyErr(bytes int) error {
	return fmt.Errorf("a key path of %d bytes (the names of its tables and keys added up), above the bound of %d: shorten the names", bytes, MaxKeyPath)
}

func (s *nestScanner) check(depth, bytes int) error {
	if depth > MaxDepth {
		return depthErr(depth)
	}
	if bytes > MaxKeyPath {
		return keyErr(bytes)
	}
	return nil
}

// key reads a dotted key and returns its parts and bytes.
func (s *nestScanner) key() (parts, bytes int) {
	for {
		s.skipBlanks()
		start := s.pos
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			s.str()
		case isBare(c):
			for !s.eof() && isBare(s.peek()) {
				s.pos++
			}
		default:
			return parts, bytes
		}
		parts++
		bytes += s.pos - start
		s.skipBlanks()
		if s.peek() != '.' {
			return parts, bytes
		}
		s.pos++
	}
}

// str skips a string of any of the four kinds, whose opening quote is next.
func (s *nestScanner) str() {
	q := s.src[s.pos]
	if s.pos+2 < len(s.src) && s.src[s.pos+1] == q && s.src[s.pos+2] == q {
		s.pos += 3
		for !s.eof() {
			c := s.advance()
			if c == '\\' && q == '"' && !s.eof() {
				s.advance()
			} else if c == q && s.pos+1 < len(s.src) && s.src[s.pos] == q && s.src[s.pos+1] == q {
				s.pos += 2
				for s.peek() == q { // up to two quotes may end the content
					s.pos++
				}
				return
			}
		}
		return
	}
	s.pos++
	for !s.eof() {
		switch c := s.peek(); {
		case c == '\n':
			return // an unterminated string: the library reports it
		case c == '\\' && q == '"':
			s.pos++
			if s.peek() != '\n' {
				s.pos++
			}
		default:
			s.pos++
			if c == q {
				return
			}
		}
	}
}

func (s *nestScanner) run() error {
	for !s.eof() {
		s.skipBlanks()
		switch c := s.peek(); {
		case s.eof():
			return nil
		case c == '\n':
			s.advance()
		case c == '#':
			s.skipLine()
		case c == '[':
			s.pos++
			if s.peek() == '[' {
				s.pos++
			}
			parts, bytes := s.key()
			if err := s.check(parts, bytes); err != nil {
				return err
			}
			s.tableDepth, s.tableBytes = parts, bytes
			s.skipLine()
		default:
			parts, bytes := s.key()
			depth, bytes := s.tableDepth+parts, s.tableBytes+bytes
			if err := s.check(depth, bytes); err != nil {
				return err
			}
			if parts == 0 || s.peek() != '=' {
				s.skipLine()
				continue
			}
			s.pos++
			if err := s.value(depth, bytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// value scans the value of a key at the given depth and key bytes, to the
// end of the line where its last array or inline table closes.
func (s *nestScanner) value(depth, bytes int) error {
	s.stack = s.stack[:0]
	for !s.eof() {
		c := s.peek()
		switch {
		case c == '"' || c == '\'':
			s.str()
			continue
		case c == '#':
			s.skipLine()
			continue
		case c == '\n':
			if len(s.stack) == 0 {
				return nil
			}
		case c == '[' || c == '{':
			d, b := depth, bytes
			if n := len(s.stack); n > 0 {
				d, b = s.stack[n-1].depth, s.stack[n-1].bytes
			}
			if c == '[' {
				d++
			}
			if err := s.check(d, b); err != nil {
				return err
			}
			s.stack = append(s.stack, nestFrame{kind: c, baseDepth: d, baseBytes: b, depth: d, bytes: b})
			s.pos++
			if c == '{' {
				if err := s.inlineKey(); err != nil {
					return err
				}
			}
			continue
		case c == ']' || c == '}':
			if n := len(s.stack); n > 0 {
				s.stack = s.stack[:n-1]
			}
		case c == ',':
			if n := len(s.stack); n > 0 && s.stack[n-1].kind == '{' {
				s.pos++
				if err := s.inlineKey(); err != nil {
					return err
				}
				continue
			}
		}
		s.advance()
	}
	return nil
}

// inlineKey reads the key of an inline table's next entry, if there is
// one, and gives its depth and bytes to the values under it.
func (s *nestScanner) inlineKey() error {
	for !s.eof() && strings.IndexByte(" \t\r\n", s.peek()) >= 0 {
		s.advance()
	}
	f := &s.stack[len(s.stack)-1]
	parts, bytes := s.key()
	f.depth, f.bytes = f.baseDepth+parts, f.baseBytes+bytes
	return s.check(f.depth, f.bytes)
}
