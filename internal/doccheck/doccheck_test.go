package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/uaxai/uaxai/internal/golden"
)

// maxLines are the documents with a bound on their length, in lines.
var maxLines = map[string]int{"README.md": 200, "ARCHITECTURE.md": 300}

// docs lists the Markdown files under test, relative to root: the
// top-level ones and everything under docs/.
func docs(t *testing.T, root string) []string {
	t.Helper()
	top, err := filepath.Glob(filepath.Join(root, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range top {
		out = append(out, filepath.Base(p))
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestLengths: README.md < 200 lines, ARCHITECTURE.md < 300.
func TestLengths(t *testing.T) {
	root := golden.RepoRoot(t)
	for name, max := range maxLines {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := lineCount(string(b)); n >= max {
			t.Errorf("%s has %d lines; keep it under %d (details go to docs/ or a package's doc.go)", name, n, max)
		}
	}
}

// TestLinks: every relative link of the documents resolves.
func TestLinks(t *testing.T) {
	root := golden.RepoRoot(t)
	files := docs(t, root)
	for _, want := range []string{"README.md", "ARCHITECTURE.md"} {
		if !slices.Contains(files, want) {
			t.Fatalf("%s not found among %v", want, files)
		}
	}
	checked := 0
	for _, f := range files {
		problems, n := checkFile(root, f)
		checked += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links in %v: is the link parser broken?", checked, files)
	}
}

// TestCheckerFindsBrokenLinks: a fixture tree with one good link of each
// kind and one broken link of each kind; the checker reports exactly the
// broken ones, by file and line.
func TestCheckerFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A page\n\n## Trust: a recipe with plugins is code\n\n## Settings: the `[slurm]` table\n\n## Twice\n\n## Twice\n")
	write("src/x.go", "package x\n")
	write("README.md", strings.Join([]string{
		"# Top", // 1
		"[ok](docs/a.md) [ok](src/x.go) [ok](src/)",                                              // 2
		"[ok](docs/a.md#trust-a-recipe-with-plugins-is-code) [ok](#top) [ok](docs/a.md#twice-1)", // 3
		"[ok](docs/a.md#settings-the-slurm-table) [web](https://example.com/x.md#nothing)",       // 4
		"`[not a link](missing.md)`",                                                             // 5
		"```",                                                                                    // 6
		"[in a fence](missing.md)",                                                               // 7
		"```",                                                                                    // 8
		"[gone](docs/b.md) [bad anchor](docs/a.md#trust) [no top](#nope)", // 9
		"[anchor in a non-Markdown file](src/x.go#L1)",                    // 10
		"[ref]: docs/c.md",     // 11
		"[out](../outside.md)", // 12
	}, "\n")+"\n")
	problems, n := checkFile(root, "README.md")
	want := []string{
		`README.md:9: docs/b.md: no such file`,
		`README.md:9: docs/a.md#trust: docs/a.md has no heading "trust" (headings: a-page, trust-a-recipe-with-plugins-is-code, settings-the-slurm-table, twice, twice-1)`,
		`README.md:9: #nope: README.md has no heading "nope" (headings: top)`,
		`README.md:10: src/x.go#L1: an anchor in a file that is not Markdown`,
		`README.md:11: docs/c.md: no such file`,
		`README.md:12: ../outside.md: outside the repository`,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if n != 13 {
		t.Errorf("%d relative links checked, want 13", n)
	}
}

// TestSlug: GitHub's anchors of headings as GitHub renders them.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"The two commands":                                 "the-two-commands",
		"Trust: a recipe with plugins is code":             "trust-a-recipe-with-plugins-is-code",
		"Settings: flags and the `[slurm]` table":          "settings-flags-and-the-slurm-table",
		"Several channels, any length, your classes":       "several-channels-any-length-your-classes",
		"Any architecture, natively: graph specs and ONNX": "any-architecture-natively-graph-specs-and-onnx",
		"report.html and `uaxai view`":                     "reporthtml-and-uaxai-view",
		"sdk/nn_graph ÄÖ":                                  "sdknn_graph-äö",
		"A [linked](x.md) **bold** heading":                "a-linked-bold-heading",
		"  spaced  out ":                                   "spaced--out",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkFile returns the broken relative links of root/rel, each as
// "file:line: target: why", and the number of relative links checked.
func checkFile(root, rel string) ([]string, int) {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return []string{err.Error()}, 0
	}
	var problems []string
	n := 0
	for i, line := range prose(string(b)) {
		if line == "" {
			continue
		}
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, tg := range targets {
			if scheme.MatchString(tg) {
				continue // a URL: not this test's
			}
			n++
			if why := resolve(root, rel, tg); why != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", rel, i+1, tg, why))
			}
		}
	}
	return problems, n
}

// prose returns the lines of a Markdown text with fenced code blocks
// blanked and inline code spans removed, so that only links that render
// are checked.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			lines[i] = ""
			continue
		}
		lines[i] = codeSpan.ReplaceAllString(l, "")
	}
	return lines
}

// resolve says why the link target tg of root/rel does not resolve ("" if
// it does).
func resolve(root, rel, tg string) string {
	path, anchor, hasAnchor := strings.Cut(tg, "#")
	target := rel
	if path != "" {
		target = filepath.Join(filepath.Dir(rel), filepath.FromSlash(path))
		if target == ".." || strings.HasPrefix(target, ".."+string(filepath.Separator)) || filepath.IsAbs(path) {
			return "outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, target)); err != nil {
			return "no such file"
		}
	}
	if !hasAnchor {
		return ""
	}
	if !strings.HasSuffix(target, ".md") {
		return "an anchor in a file that is not Markdown"
	}
	b, err := os.ReadFile(filepath.Join(root, target))
	if err != nil {
		return err.Error()
	}
	anchors := headings(string(b))
	if !slices.Contains(anchors, anchor) {
		return fmt.Sprintf("%s has no heading %q (headings: %s)", filepath.ToSlash(target), anchor, strings.Join(anchors, ", "))
	}
	return ""
}

// headings returns the anchors GitHub gives the ATX headings of a
// Markdown text, in order: a repeated slug gets -1, -2, ...
func headings(text string) []string {
	var out []string
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			seen[s]++
			s = fmt.Sprintf("%s-%d", s, k)
		} else {
			seen[s] = 1
		}
		out = append(out, s)
	}
	return out
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor of a heading's text: links reduced to their
// text, lower case, every character that is not a letter, digit, space,
// hyphen or underscore dropped, each space a hyphen.
func slug(h string) string {
	h = linkText.ReplaceAllString(strings.TrimSpace(h), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
