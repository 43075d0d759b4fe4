package graph

import (
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
