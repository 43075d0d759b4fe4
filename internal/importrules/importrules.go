// Package importrules reads which package of the module may import which
// from the `imports` code blocks of a Markdown file (ARCHITECTURE.md) and
// checks a list of packages' imports against them, so that the document
// and the tree cannot drift apart.
//
// A rule is one line, "FROM -> TO..." (FROM may import each TO) or
// "FROM !> TO..." (it may not), optionally preceded by "test" (the rule
// binds the imports of _test.go files only; the other rules bind those
// too). A pattern is a module-relative package path; "P/..." is P and
// every package below it, and "..." alone is every package. "#" starts a
// comment. For an import of P by F, the rules whose FROM matches F and one
// of whose TO matches P are the candidates, and the most specific decides:
// the most specific FROM, then the most specific TO that matched; at a tie
// a test rule before a plain one (for a test's import), then a deny before
// an allow. An import of a module package that no rule allows is refused.
package importrules

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Rule is one line of an imports block.
type Rule struct {
	File string // the Markdown file
	Line int    // 1-based line in File
	Test bool   // binds test imports only
	Deny bool   // "!>" rather than "->"
	From string
	To   []string
}

// Where is "file:line" of the rule.
func (r Rule) Where() string { return fmt.Sprintf("%s:%d", r.File, r.Line) }

func (r Rule) String() string {
	op := "->"
	if r.Deny {
		op = "!>"
	}
	s := r.From + " " + op + " " + strings.Join(r.To, " ")
	if r.Test {
		s = "test " + s
	}
	return s
}

// Parse reads the rules of every fenced code block whose info string is
// "imports" in the Markdown text r, named name in errors. It is an error
// for the text to hold no rule.
func Parse(name string, r io.Reader) ([]Rule, error) {
	var rules []Rule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	in, line := false, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		trim := strings.TrimSpace(text)
		if !in {
			if strings.HasPrefix(trim, "```") && strings.TrimSpace(strings.TrimPrefix(trim, "```")) == "imports" {
				in = true
			}
			continue
		}
		if strings.HasPrefix(trim, "```") {
			in = false
			continue
		}
		rule, ok, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if ok {
			rule.File, rule.Line = name, line
			rules = append(rules, rule)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if in {
		return nil, fmt.Errorf("%s: the imports block opened before line %d is not closed (accepted: a line of ``` ends it)", name, line+1)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s: no import rule (accepted: a code block with info string \"imports\" holding lines \"FROM -> TO...\" or \"FROM !> TO...\")", name)
	}
	return rules, nil
}

// parseLine reads one line of a block; ok is false for a blank or
// comment line.
func parseLine(text string) (r Rule, ok bool, err error) {
	if i := strings.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
	}
	f := strings.Fields(text)
	if len(f) == 0 {
		return Rule{}, false, nil
	}
	if f[0] == "test" {
		r.Test = true
		f = f[1:]
	}
	if len(f) < 3 || (f[1] != "->" && f[1] != "!>") {
		return Rule{}, false, fmt.Errorf("%q is not a rule (accepted: [test] FROM -> TO... or [test] FROM !> TO...)", strings.TrimSpace(text))
	}
	r.From, r.Deny, r.To = f[0], f[1] == "!>", f[2:]
	for _, p := range append([]string{r.From}, r.To...) {
		if err := checkPattern(p); err != nil {
			return Rule{}, false, err
		}
	}
	return r, true, nil
}

// checkPattern says whether p is a module-relative package path, with an
// optional final "/..." (or "..." alone).
func checkPattern(p string) error {
	if p == "..." {
		return nil
	}
	base := strings.TrimSuffix(p, "/...")
	bad := base == "" || strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/") ||
		strings.Contains(base, "...") || strings.Contains(base, "//") || strings.Contains(base, "->") || strings.Contains(base, "!>")
	for _, e := range strings.Split(base, "/") {
		if e == "." || e == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("pattern %q is not a package pattern (accepted: a module-relative path such as host/engine, P/... for P and its subtree, or ...)", p)
	}
	return nil
}

// specificity ranks pattern p matching path; -1 when it does not match.
// A path is more specific than any subtree, a longer subtree than a
// shorter one.
func specificity(p, path string) int {
	if p == "..." {
		return 0
	}
	if base, ok := strings.CutSuffix(p, "/..."); ok {
		if path == base || strings.HasPrefix(path, base+"/") {
			return 2 * len(base)
		}
		return -1
	}
	if p == path {
		return 2*len(p) + 1
	}
	return -1
}

// Package is a package of the module and its imports of module packages,
// all module-relative: Imports of its non-test files, TestImports of its
// _test.go files (in-package and external) beyond those.
type Package struct {
	Path        string
	Imports     []string
	TestImports []string
}

// Violation is an import the rules refuse: By is the rule that denies it,
// nil when no rule allows it.
type Violation struct {
	From, To string
	Test     bool
	By       *Rule
}

func (v Violation) String() string {
	kind := "imports"
	if v.Test {
		kind = "imports in its tests"
	}
	if v.By != nil {
		return fmt.Sprintf("%s %s %s: denied by %s (%s)", v.From, kind, v.To, v.By.Where(), v.By)
	}
	return fmt.Sprintf("%s %s %s: allowed by no rule (add one to the imports block, or change the import)", v.From, kind, v.To)
}

// Decide returns the rule that decides from's import of to (test: a test
// file's import) and whether the import is allowed; the rule is nil when
// no rule matches.
func Decide(rules []Rule, from, to string, test bool) (*Rule, bool) {
	var best *Rule
	var bf, bt int
	for i := range rules {
		r := &rules[i]
		if r.Test && !test {
			continue
		}
		f := specificity(r.From, from)
		if f < 0 {
			continue
		}
		t := -1
		for _, p := range r.To {
			t = max(t, specificity(p, to))
		}
		if t < 0 {
			continue
		}
		if best == nil || f > bf || (f == bf && (t > bt || (t == bt && before(r, best)))) {
			best, bf, bt = r, f, t
		}
	}
	return best, best != nil && !best.Deny
}

// before says whether r decides before s at equal specificity: a test
// rule before a plain one, then a deny before an allow.
func before(r, s *Rule) bool {
	if r.Test != s.Test {
		return r.Test
	}
	return r.Deny && !s.Deny
}

// Check returns every import of pkgs the rules refuse, in package and
// import order. A package's import of itself (an external test package's)
// is always allowed.
func Check(rules []Rule, pkgs []Package) []Violation {
	var out []Violation
	for _, p := range pkgs {
		for _, test := range []bool{false, true} {
			imps := p.Imports
			if test {
				imps = p.TestImports
			}
			imps = append([]string(nil), imps...)
			sort.Strings(imps)
			for _, to := range imps {
				if to == p.Path {
					continue
				}
				if r, ok := Decide(rules, p.Path, to, test); !ok {
					out = append(out, Violation{From: p.Path, To: to, Test: test, By: r})
				}
			}
		}
	}
	return out
}

// Unused returns, for each rule, the patterns that match no package of
// pkgs (a rule naming a package that is gone), as "file:line: pattern".
func Unused(rules []Rule, pkgs []Package) []string {
	var out []string
	for _, r := range rules {
		for _, p := range append([]string{r.From}, r.To...) {
			found := false
			for _, q := range pkgs {
				if specificity(p, q.Path) >= 0 {
					found = true
					break
				}
			}
			if !found {
				out = append(out, fmt.Sprintf("%s: pattern %s matches no package of the module", r.Where(), p))
			}
		}
	}
	return out
}
