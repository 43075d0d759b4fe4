package onnx

import (
	"fmt"
	"sort"
	"strings"
)

// ModulePath returns the PyTorch module path (a name of
// model.named_modules(), "" for the root module) of the node named name,
// as torch.onnx.export (1.13 and later) names nodes: "/" + the scopes of
// the called modules + "/" + the operator, each scope the module's
// qualified name cut before its last non-numeric atom
// (torch.onnx.utils._unqualified_variable_name). So "/block3/Relu_2" is
// in block3, "/inc3/convs.2/Conv" in inc3.convs.2 (a ModuleList is not
// called, it has no scope), "/block1/short/short.0/Conv" in
// block1.short.0 (the Sequential short is called, then its child short.0)
// and "/Relu" or a name without "/" (a node torch did not place in a
// module) in the root, "".
//
// A scope "a.n" (n numeric) after a scope "a" continues it (the child n
// of the called container a); a module named like its own child
// container (x.a.a.0) would read as x.a.0, which these names cannot tell
// apart.
func ModulePath(name string) string {
	if !strings.HasPrefix(name, "/") {
		return ""
	}
	scopes := strings.Split(name[1:], "/")
	scopes = scopes[:len(scopes)-1]
	var path []string
	prev := ""
	for _, s := range scopes {
		head, rest, dotted := strings.Cut(s, ".")
		if dotted && head == prev && numericAtoms(rest) {
			path = append(path, rest)
		} else {
			path = append(path, s)
		}
		prev = s
	}
	return strings.Join(path, ".")
}

// numericAtoms reports whether every dot-separated atom of s is a number.
func numericAtoms(s string) bool {
	for _, a := range strings.Split(s, ".") {
		if a == "" || strings.Trim(a, "0123456789") != "" {
			return false
		}
	}
	return true
}

// inModule reports whether module path p is module or inside it.
func inModule(p, module string) bool {
	return module == "" || p == module || strings.HasPrefix(p, module+".")
}

// ModuleOutput returns the name of the value the PyTorch module at path
// computes: the first output of the last node (in topological order)
// that belongs to the module or to a module inside it. The root module
// "" is the whole graph, whose last node's output it returns. A module
// no node belongs to is an error naming the modules there are.
//
// A functional call in the parent's forward (F.relu(self.conv(x))) is
// the parent's node, not the child's: the child's output is what the
// child module computed, as a forward hook on it sees it.
func (m *Model) ModuleOutput(path string) (string, error) {
	for i := len(m.Nodes) - 1; i >= 0; i-- {
		n := m.Nodes[i]
		if inModule(ModulePath(n.Name), path) {
			return n.Outputs[0], nil
		}
	}
	return "", fmt.Errorf("onnx: %s: no node belongs to module %q; modules with nodes: %s", m.Name, path, quoted(m.Modules()))
}

// Modules returns, sorted, the module paths that nodes belong to
// directly ("" for the root module when it has nodes of its own).
func (m *Model) Modules() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.Nodes {
		p := ModulePath(n.Name)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// quoted joins strings quoted, comma separated.
func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
