package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/report"
)

// hostile is a run directory made to be hostile, beside a directory
// outside it holding a secret.
type hostile struct {
	dir, outside, secretPath string
	secret                   []byte
	// inside are the bytes of every regular file the run directory
	// holds, the only bodies a 200 may have.
	inside map[string][]byte
}

// newHostile makes a run directory holding report.html, results.json,
// sub/index.html, an empty directory, a FIFO, a socket, a device (where
// it may be made), a relative symbolic link
// to report.html (inside), and symbolic links that lead outside: to /, to
// the secret (absolute), to the outside directory (absolute and
// relative), to the run directory itself by its absolute path, to
// itself (a loop), and a directory whose index.html is a link to the
// secret.
func newHostile(t testing.TB, base string) *hostile {
	h := &hostile{dir: filepath.Join(base, "run"), outside: filepath.Join(base, "outside"), inside: map[string][]byte{}}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	h.secret = []byte("SECRET-" + hex.EncodeToString(b[:]))
	h.secretPath = filepath.Join(h.outside, "secret.txt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(h.dir, "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(h.dir, "empty"), 0o755))
	must(os.MkdirAll(filepath.Join(h.dir, "linkindex"), 0o755))
	must(os.MkdirAll(h.outside, 0o755))
	must(os.WriteFile(h.secretPath, h.secret, 0o644))
	must(os.WriteFile(filepath.Join(h.outside, "index.html"), h.secret, 0o644))
	for name, body := range map[string]string{
		"report.html":    "<!DOCTYPE html><title>the report</title>",
		"results.json":   `{"rows":[]}`,
		"sub/index.html": "<!DOCTYPE html><title>sub</title>",
	} {
		must(os.WriteFile(filepath.Join(h.dir, name), []byte(body), 0o644))
		h.inside[name] = []byte(body)
	}
	must(syscall.Mkfifo(filepath.Join(h.dir, "fifo"), 0o644))
	must(syscall.Mknod(filepath.Join(h.dir, "socket"), syscall.S_IFSOCK|0o644, 0))
	// A device (/dev/null's numbers) needs CAP_MKNOD: without it, "dev" is
	// missing, and 404 all the same.
	_ = syscall.Mknod(filepath.Join(h.dir, "dev"), syscall.S_IFCHR|0o666, int((1<<8)|3))
	rel, err := filepath.Rel(h.dir, h.outside)
	must(err)
	for name, target := range map[string]string{
		"inlink.html": "report.html",
		"rootlink":    "/",
		"outfile":     h.secretPath,
		"outdir":      h.outside,
		"reloutdir":   rel,
		"relout":      filepath.Join(rel, "secret.txt"),
		"self":        h.dir,
		"loop":        "loop",
		// A directory inside whose index.html is a link to the secret.
		"linkindex/index.html": filepath.Join("..", rel, "secret.txt"),
	} {
		must(os.Symlink(target, filepath.Join(h.dir, name)))
	}
	return h
}

// start serves dir with Serve, returning its host:port; the server ends
// with the test.
func start(t *testing.T, dir string) string {
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, dir, func(u string) { urls <- u }) }()
	var u string
	select {
	case u = <-urls:
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/"+Page)
	if strings.Contains(addr, "/") || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Serve printed %q, want http://127.0.0.1:PORT/%s", u, Page)
	}
	return addr
}

// raw sends the request text as it is (no client cleans its path or
// fills in its Host) and reads the answer. The deadline only keeps a
// server that blocks (on a FIFO) from hanging the test.
func raw(t *testing.T, addr, method, text string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return nil, []byte(err.Error())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%q: reading the body: %v", text, err)
	}
	return resp, body
}

// TestHostile: requests crafted as curl --path-as-is or nc would send
// them, against a run directory with symbolic links out of it, a FIFO and
// directories. Nothing outside the directory is ever served (the secret,
// /etc/passwd), a FIFO answers at once, no directory is listed, only the
// server's own Host and only GET and HEAD are answered.
func TestHostile(t *testing.T) {
	h := newHostile(t, t.TempDir())
	addr := start(t, h.dir)
	port := addr[strings.LastIndex(addr, ":")+1:]
	passwd, _ := os.ReadFile("/etc/passwd")
	get := func(target string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n"
	}
	rep, sub := string(h.inside["report.html"]), string(h.inside["sub/index.html"])
	for _, c := range []struct {
		name, method, req string
		status            int
		body              string // the whole body, when status is 200
	}{
		{"report", "GET", get("/report.html"), 200, rep},
		{"root is report.html", "GET", get("/"), 200, rep},
		{"localhost", "GET", "GET / HTTP/1.1\r\nHost: localhost:" + port + "\r\nConnection: close\r\n\r\n", 200, rep},
		{"LOCALHOST", "GET", "GET / HTTP/1.1\r\nHost: LOCALHOST:" + port + "\r\nConnection: close\r\n\r\n", 200, rep},
		{"HEAD", "HEAD", "HEAD /report.html HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n", 200, ""},
		{"link inside", "GET", get("/inlink.html"), 200, rep},
		{"directory's index.html", "GET", get("/sub/"), 200, sub},
		{"directory without /", "GET", get("/sub"), 301, ""},
		{"empty directory", "GET", get("/empty/"), 404, ""},
		{"file as directory", "GET", get("/report.html/"), 404, ""},
		{"missing", "GET", get("/nope.html"), 404, ""},
		{"link to /", "GET", get("/rootlink/etc/passwd"), 404, ""},
		{"link to / then the secret", "GET", get("/rootlink" + h.secretPath), 404, ""},
		{"absolute link to the secret", "GET", get("/outfile"), 404, ""},
		{"absolute link to a directory outside", "GET", get("/outdir/secret.txt"), 404, ""},
		{"index.html of a directory outside", "GET", get("/outdir/"), 404, ""},
		{"relative link to a directory outside", "GET", get("/reloutdir/secret.txt"), 404, ""},
		{"relative link to the secret", "GET", get("/relout"), 404, ""},
		{"absolute link to the run directory", "GET", get("/self/report.html"), 404, ""},
		{"index.html a link outside", "GET", get("/linkindex/"), 404, ""},
		{"link loop", "GET", get("/loop"), 404, ""},
		{"FIFO", "GET", get("/fifo"), 404, ""},
		{"socket", "GET", get("/socket"), 404, ""},
		{"device", "GET", get("/dev"), 404, ""},
		{"dot-dot", "GET", get("/../../../../../../etc/passwd"), 400, ""},
		{"dot-dot to the secret", "GET", get("/../outside/secret.txt"), 400, ""},
		{"percent-encoded dot-dot", "GET", get("/%2e%2e/outside/secret.txt"), 400, ""},
		{"dot-dot inside", "GET", get("/sub/../report.html"), 400, ""},
		{"dot", "GET", get("/./report.html"), 400, ""},
		{"double slash", "GET", get("//report.html"), 400, ""},
		{"backslash", "GET", get("/..%5coutside%5csecret.txt"), 400, ""},
		{"NUL", "GET", get("/report.html%00.txt"), 400, ""},
		{"other Host", "GET", "GET /report.html HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 403, ""},
		{"rebound Host with the port", "GET", "GET /report.html HTTP/1.1\r\nHost: evil.example:" + port + "\r\nConnection: close\r\n\r\n", 403, ""},
		{"other port", "GET", "GET /report.html HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n", 403, ""},
		{"no port", "GET", "GET /report.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 403, ""},
		{"no Host (HTTP/1.0)", "GET", "GET /report.html HTTP/1.0\r\n\r\n", 403, ""},
		{"POST", "POST", "POST /report.html HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 405, ""},
		{"PUT", "PUT", "PUT /new.html HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx", 405, ""},
		{"OPTIONS", "OPTIONS", "OPTIONS * HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n", 405, ""},
	} {
		resp, body := raw(t, addr, c.method, c.req)
		if resp == nil {
			t.Errorf("%s: no answer: %s", c.name, body)
			if c.name == "FIFO" { // a server blocked in open(2): let it go
				if f, err := os.OpenFile(filepath.Join(h.dir, "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			continue
		}
		if bytes.Contains(body, h.secret) || len(passwd) > 0 && bytes.Contains(body, passwd) {
			t.Errorf("%s: the answer holds a file outside the run directory: %.200q", c.name, body)
		}
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d (body %.200q)", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if c.status == 200 && string(body) != c.body {
			t.Errorf("%s: body %.200q, want %.200q", c.name, body, c.body)
		}
		if got, want := resp.Header.Get("Content-Security-Policy"), Policy; got != want {
			t.Errorf("%s: Content-Security-Policy %q, want %q", c.name, got, want)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", c.name, got)
		}
		if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("%s: Referrer-Policy %q, want no-referrer", c.name, got)
		}
		switch c.status {
		case 200:
			if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
				t.Errorf("%s: Content-Type %q, want text/html; charset=utf-8", c.name, got)
			}
		case 301:
			if got := resp.Header.Get("Location"); got != "sub/" {
				t.Errorf("%s: Location %q, want sub/", c.name, got)
			}
		case 405:
			if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
				t.Errorf("%s: Allow %q, want GET, HEAD", c.name, got)
			}
		}
	}
	// The FIFO was not left open: a writer that does not wait finds no
	// reader (ENXIO), as it would if the server had never touched it.
	if f, err := os.OpenFile(filepath.Join(h.dir, "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); !errors.Is(err, syscall.ENXIO) {
		if err == nil {
			f.Close()
		}
		t.Errorf("opening the FIFO to write: %v, want ENXIO (no reader)", err)
	}
}

// TestContentType: the files of a run directory are served with their
// types, whatever the machine's mime.types says, and a file of unknown
// type is application/octet-stream (nosniff keeps the browser from
// guessing it is HTML).
func TestContentType(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"report.html":  "text/html; charset=utf-8",
		"results.json": "application/json",
		"records.csv":  "text/csv; charset=utf-8",
		"tables.md":    "text/markdown; charset=utf-8",
		"figure.svg":   "image/svg+xml",
		"unit.unit":    "application/octet-stream",
		"noext":        "application/octet-stream",
		"UPPER.HTML":   "text/html; charset=utf-8",
	}
	for name := range files {
		// Bytes that a browser sniffing them would take for HTML.
		if err := os.WriteFile(filepath.Join(dir, name), []byte("<html><script>x</script>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := start(t, dir)
	for name, want := range files {
		resp, body := raw(t, addr, "GET", "GET /"+name+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		if resp == nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %s", name, resp, body)
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != want {
			t.Errorf("%s: Content-Type %q, want %q", name, got, want)
		}
	}
}

// TestPolicyFitsTheReport: the header's policy allows what report.html's
// own <meta> policy allows, directive for directive (so the served page
// works as the offline file does), and the page loads nothing from
// elsewhere (no src or href but a fragment or data:) that the header
// would block.
func TestPolicyFitsTheReport(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, report.HTML{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	m := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("report.html has no Content-Security-Policy <meta>")
	}
	header := map[string]string{}
	for _, d := range strings.Split(Policy, ";") {
		f := strings.Fields(d)
		header[f[0]] = strings.Join(f[1:], " ")
	}
	for _, d := range strings.Split(m[1], ";") {
		f := strings.Fields(d)
		if got, want := header[f[0]], strings.Join(f[1:], " "); got != want {
			t.Errorf("directive %s: header %q, report.html's %q", f[0], got, want)
		}
	}
	for _, a := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(a[1], "#") && !strings.HasPrefix(a[1], "data:") {
			t.Errorf("report.html loads %q, which the policy blocks", a[1])
		}
	}
	for _, want := range []string{"frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'"} {
		if !strings.Contains(Policy, want) {
			t.Errorf("Policy %q lacks %q", Policy, want)
		}
	}
}

// TestName: the canonical paths map to their names, every other path is
// refused, and a refused path's error quotes it.
func TestName(t *testing.T) {
	for _, c := range []struct {
		p, name string
		dir     bool
	}{
		{"/", Page, false},
		{"/report.html", "report.html", false},
		{"/a/b.json", "a/b.json", false},
		{"/a/", "a", true},
		{"/a/b/", "a/b", true},
		{"/...", "...", false},
		{"/..a", "..a", false},
		{"/.hidden", ".hidden", false},
	} {
		name, dir, err := Name(c.p)
		if err != nil || name != c.name || dir != c.dir {
			t.Errorf("Name(%q) = %q %v %v, want %q %v", c.p, name, dir, err, c.name, c.dir)
		}
	}
	for _, p := range []string{"", "report.html", "*", "//", "//a", "/a//b", "/..", "/../a", "/a/..", "/a/../b",
		"/.", "/./a", "/a/./b", "/a/.", "/a\\b", "/a\x00", "/a/../", "/./"} {
		if name, _, err := Name(p); err == nil {
			t.Errorf("Name(%q) = %q, want an error", p, name)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", p)) {
			t.Errorf("Name(%q): %v does not quote the path", p, err)
		}
	}
}

// TestNewErrors: a directory that is not there and a port out of range
// are errors naming them.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	for _, port := range []int{0, -1, 65536} {
		if _, err := New(dir, port); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d: want 1..65535", port)) {
			t.Errorf("New(%d): %v", port, err)
		}
	}
	h, err := New(dir, 65535)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	missing := filepath.Join(dir, "nope")
	if _, err := New(missing, 1); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New(missing): %v", err)
	}
	if err := Serve(context.Background(), missing, func(string) { t.Error("Serve of a missing directory listened") }); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Serve(missing): %v", err)
	}
}
