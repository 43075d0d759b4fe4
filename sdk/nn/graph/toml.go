package graph

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// ReadSpecFile reads a network written in TOML:
//
//	name = "fcn"
//	in_channels = 1
//	in_len = 640
//	output = "fc"          # optional: the last node
//
//	[[nodes]]
//	name = "conv1"
//	op = "conv1d"
//	inputs = ["pad1"]      # optional: the previous node
//	out = 16               # the op's attributes, inline
//	kernel = 8
//	padding = [3, 4]
//
// It checks the spec as Compile does; errors name the file, the line of
// the [[nodes]] table at fault and what is accepted.
//
// The file must be a regular file of at most MaxSpecBytes bytes: a FIFO,
// a device such as /dev/zero, a directory or a larger file is refused
// before it is read.
func ReadSpecFile(path string) (Spec, error) {
	data, err := atomicfile.ReadRegular(path, specLimit)
	if err != nil {
		return Spec{}, err
	}
	return DecodeSpec(data, path)
}

// MaxSpecBytes bounds the size of a spec file (a spec is text of some
// lines a node: a network of a million nodes fits).
const MaxSpecBytes = 64 << 20

var specLimit = atomicfile.Limit{Bytes: MaxSpecBytes, What: "a graph spec"}

// fileSpec is the TOML layout: a node's keys other than name, op and
// inputs are its attributes.
type fileSpec struct {
	Name       string           `toml:"name"`
	InChannels int              `toml:"in_channels"`
	InLen      int              `toml:"in_len"`
	Output     string           `toml:"output"`
	Nodes      []map[string]any `toml:"nodes"`
}

var nodesHeader = regexp.MustCompile(`^\s*\[\[\s*"?nodes"?\s*\]\]`)

// DecodeSpec decodes a TOML spec (see ReadSpecFile); file names it in
// errors.
func DecodeSpec(data []byte, file string) (Spec, error) {
	if err := scanSpec(data); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", file, err)
	}
	var fs fileSpec
	md, err := toml.Decode(string(data), &fs)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Spec{}, fmt.Errorf("%s: unknown key %q; accepted at the top: name, in_channels, in_len, output, [[nodes]]", file, und[0].String())
	}
	// The line of each [[nodes]] table, for errors.
	var lines []int
	for i, l := range strings.Split(string(data), "\n") {
		if nodesHeader.MatchString(l) {
			lines = append(lines, i+1)
		}
	}
	at := func(i int) string {
		if len(lines) == len(fs.Nodes) {
			return fmt.Sprintf("%s:%d", file, lines[i])
		}
		return file
	}
	spec := Spec{Name: fs.Name, InChannels: fs.InChannels, InLen: fs.InLen, Output: fs.Output}
	for i, raw := range fs.Nodes {
		nd, err := DecodeNode(raw)
		if err != nil {
			return Spec{}, fmt.Errorf("%s: [[nodes]] %d %q: %w", at(i), i, nd.Name, err)
		}
		spec.Nodes = append(spec.Nodes, nd)
	}
	if _, err := Compile(spec); err != nil {
		var ne *NodeError
		if errors.As(err, &ne) {
			return Spec{}, fmt.Errorf("%s: [[nodes]] %d %q: %w", at(ne.Index), ne.Index, ne.Name, ne.Err)
		}
		return Spec{}, fmt.Errorf("%s: %w", file, err)
	}
	return spec, nil
}

// DecodeNode decodes one node table as a spec file writes it: name, op,
// inputs, and the op's attributes inline (see ReadSpecFile), checking the
// attributes against the op table.
func DecodeNode(raw map[string]any) (Node, error) {
	var nd Node
	str := func(key string) (string, error) {
		v, ok := raw[key]
		if !ok {
			return "", fmt.Errorf("no %s; every node needs name and op", key)
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s = %v (%T); need a string", key, v, v)
		}
		return s, nil
	}
	var err error
	if nd.Name, err = str("name"); err != nil {
		return nd, err
	}
	if nd.Op, err = str("op"); err != nil {
		return nd, err
	}
	op, ok := Ops().Lookup(nd.Op)
	if !ok {
		return nd, fmt.Errorf("unknown op %q; accepted: %s", nd.Op, strings.Join(Ops().Kinds(), ", "))
	}
	if v, ok := raw["inputs"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nd, fmt.Errorf("inputs = %v; need a list of node names", v)
		}
		nd.Inputs = []string{}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nd, fmt.Errorf("inputs = %v; need a list of node names (strings)", v)
			}
			nd.Inputs = append(nd.Inputs, s)
		}
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "name" || k == "op" || k == "inputs" {
			continue
		}
		if op.attr(k) == nil {
			return nd, fmt.Errorf("unknown attribute %q of op %s; accepted: name, op, inputs and %s", k, op.Kind, op.acceptedAttrs())
		}
		if nd.Attrs == nil {
			nd.Attrs = map[string]any{}
		}
		nd.Attrs[k] = raw[k]
	}
	if _, err := op.resolve(nd.Attrs); err != nil {
		return nd, err
	}
	return nd, nil
}

// Bounds of a spec file's text, checked before the TOML library reads it
// (scanSpec): its memory and time grow with the tables, keys and values,
// and with the nesting of arrays and inline tables, so they are counted
// first.
const (
	// MaxSpecItems bounds a spec file's keys and array elements, added
	// up: 64 a node (a node has at most ten keys).
	MaxSpecItems = 64 * MaxNodes
	// MaxSpecDepth bounds the nesting of arrays and inline tables in a
	// value (nodes = [{padding = [1, 1]}] is 3).
	MaxSpecDepth = 8
)

// scanSpec counts what a TOML spec text holds, as far as the TOML syntax
// must be followed to count it (strings and comments skipped): tables,
// every table header and inline table (in a spec, only the [[nodes]]
// headers or inline node tables), at most MaxNodes; keys and array
// elements, at most MaxSpecItems; nesting, at most MaxSpecDepth. It never
// fails on a syntax error (that is the TOML library's to report) and
// overcounts only text that is not a spec.
func scanSpec(data []byte) error {
	tables, items, err := countSpec(data)
	if err != nil {
		return err
	}
	if tables > MaxNodes {
		return fmt.Errorf("%d node tables ([[nodes]] headers and inline tables), above the bound of %d nodes (graph.MaxNodes)", tables, MaxNodes)
	}
	if items > MaxSpecItems {
		return fmt.Errorf("%d keys and array elements, above the bound of %d (graph.MaxSpecItems: %d a node)", items, MaxSpecItems, MaxSpecItems/MaxNodes)
	}
	return nil
}

// countSpec counts a text's tables and items for scanSpec: items are each
// '=', ',' and array opening (an upper bound of the keys and array
// elements: a comma between an inline table's keys counts too). It
// refuses nesting beyond MaxSpecDepth where it meets it.
func countSpec(data []byte) (tables, items int, err error) {
	depth := 0
	lineStart := true
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			lineStart = true
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '"' || c == '\'':
			i = skipString(data, i) - 1
		case c == '[' && lineStart && depth == 0:
			tables++ // a table header: the rest of the line is its name
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i--
		case c == '[' || c == '{':
			if depth++; depth > MaxSpecDepth {
				return 0, 0, fmt.Errorf("line %d: arrays and inline tables nested %d deep, above the bound of %d (graph.MaxSpecDepth); a spec nests at most 3 (nodes = [{padding = [1, 1]}])", lineOf(data, i), depth, MaxSpecDepth)
			}
			if c == '{' {
				tables++
			} else {
				items++ // the array's first element
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		case c == '=' || c == ',':
			items++
		}
		lineStart = false
	}
	return tables, items, nil
}

// lineOf is the line number of data[i].
func lineOf(data []byte, i int) int { return bytes.Count(data[:i], []byte("\n")) + 1 }

// skipString returns the index after the TOML string (basic, literal, or
// either's multi-line form) whose opening quote is at data[i], or
// len(data) if it is not closed.
func skipString(data []byte, i int) int {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		for j := i + 3; j < len(data); j++ {
			switch {
			case data[j] == '\\' && q == '"':
				j++
			case data[j] == q && j+2 < len(data) && data[j+1] == q && data[j+2] == q:
				j += 3
				for j < len(data) && data[j] == q { // up to two quotes may end the content
					j++
				}
				return j
			}
		}
		return len(data)
	}
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\n':
			return j // unterminated: the library reports it
		case '\\':
			if q == '"' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(data)
}
