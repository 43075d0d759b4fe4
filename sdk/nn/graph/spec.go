package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Input names the network's input among a node's inputs.
const Input = "input"

// Spec is a network: an input of InChannels x InLen samples and its
// nodes.
type Spec struct {
	Name       string `toml:"name" json:"name"`
	InChannels int    `toml:"in_channels" json:"in_channels"`
	InLen      int    `toml:"in_len" json:"in_len"`
	// Output names the output node; "" is the last node.
	Output string `toml:"output,omitempty" json:"output,omitempty"`
	Nodes  []Node `toml:"nodes" json:"nodes"`
}

// Node is one op of a Spec.
type Node struct {
	// Name is unique in the Spec: a module path (see the package doc).
	Name string `toml:"name" json:"name"`
	// Op is an op kind of the table (see the package doc).
	Op string `toml:"op" json:"op"`
	// Inputs name earlier nodes or Input; nil is the previous node's
	// output (Input for the first node).
	Inputs []string `toml:"inputs,omitempty" json:"inputs,omitempty"`
	// Attrs are the op's attributes: int64, float64, bool, string, or
	// []int64 values, as TOML decodes them (int and []int are accepted
	// too). In a TOML file they are written inline in the node's
	// [[nodes]] table (see ReadSpecFile); the op table (Ops) says which
	// each op accepts, and Net.Spec gives them with defaults filled in.
	Attrs map[string]any `toml:"attrs,omitempty" json:"attrs,omitempty"`
}

// OutputIndex is the index of the output node: the node named Output, or
// the last node.
func (s Spec) OutputIndex() (int, error) {
	if len(s.Nodes) == 0 {
		return 0, fmt.Errorf("graph %q has no nodes", s.Name)
	}
	if s.Output == "" {
		return len(s.Nodes) - 1, nil
	}
	for i, n := range s.Nodes {
		if n.Name == s.Output {
			return i, nil
		}
	}
	return 0, fmt.Errorf("graph %q: output %q is not a node", s.Name, s.Output)
}

// InputIndex is the index of the node whose value node i reads as its
// j-th input (Inputs, or the previous node), -1 for the network's input.
func (s Spec) InputIndex(i, j int) (int, error) {
	n := s.Nodes[i]
	if len(n.Inputs) == 0 {
		if j != 0 {
			return 0, fmt.Errorf("graph %q: node %q has one input, not %d", s.Name, n.Name, j+1)
		}
		return i - 1, nil
	}
	if j >= len(n.Inputs) {
		return 0, fmt.Errorf("graph %q: node %q has %d inputs, not %d", s.Name, n.Name, len(n.Inputs), j+1)
	}
	if n.Inputs[j] == Input {
		return -1, nil
	}
	for k := i - 1; k >= 0; k-- {
		if s.Nodes[k].Name == n.Inputs[j] {
			return k, nil
		}
	}
	return 0, fmt.Errorf("graph %q: node %q reads %q, which is not an earlier node", s.Name, n.Name, n.Inputs[j])
}

// UnmarshalJSON decodes a node as encoding/json encodes it, with its
// attributes in the form the op table accepts: an integer number is an
// int64, another number a float64, a list of integers a []int64. Unknown
// fields are refused.
func (n *Node) UnmarshalJSON(b []byte) error {
	var raw struct {
		Name   string                     `json:"name"`
		Op     string                     `json:"op"`
		Inputs []string                   `json:"inputs"`
		Attrs  map[string]json.RawMessage `json:"attrs"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&raw); err != nil {
		return fmt.Errorf("graph node: %w", err)
	}
	*n = Node{Name: raw.Name, Op: raw.Op, Inputs: raw.Inputs}
	if raw.Attrs == nil {
		return nil
	}
	n.Attrs = map[string]any{}
	for k, v := range raw.Attrs {
		a, err := jsonAttr(v)
		if err != nil {
			return fmt.Errorf("graph node %q: attribute %s: %w", raw.Name, k, err)
		}
		n.Attrs[k] = a
	}
	return nil
}

// jsonAttr decodes one attribute value (see Node.UnmarshalJSON).
func jsonAttr(b json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	num := func(x json.Number) any {
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	}
	switch x := v.(type) {
	case json.Number:
		return num(x), nil
	case []any:
		ints := make([]int64, len(x))
		for i, e := range x {
			en, ok := e.(json.Number)
			if !ok {
				return nil, fmt.Errorf("a list of %T; accepted: a list of integers", e)
			}
			iv, ok := num(en).(int64)
			if !ok {
				return nil, fmt.Errorf("a list holding %s; accepted: a list of integers", en)
			}
			ints[i] = iv
		}
		return ints, nil
	}
	return v, nil
}
