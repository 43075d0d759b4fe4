package serve

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzViewPath: for any request path (as a client sends it, parsed as the
// server parses it, and as a percent-decoded path of any bytes) and any
// Host, against a run directory with symbolic links out of it, a FIFO and
// a secret outside: no panic, no 5xx, never the secret's bytes; a 200
// only for the server's own Host, with the bytes of a file inside the run
// directory.
func FuzzViewPath(f *testing.F) {
	h := newHostile(f, f.TempDir())
	const port = 8080
	hd, err := New(h.dir, port)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { hd.Close() })
	own := "127.0.0.1:8080"
	for _, p := range []string{"/", "/report.html", "/inlink.html", "/sub/", "/sub", "/empty/", "/fifo",
		"/rootlink/etc/passwd", "/rootlink" + h.secretPath, "/outfile", "/outdir/secret.txt", "/outdir/",
		"/reloutdir/secret.txt", "/relout", "/self/report.html", "/../outside/secret.txt",
		"/%2e%2e/outside/secret.txt", "/%2E%2E%2Foutside%2Fsecret.txt", "/..%5coutside%5csecret.txt",
		"/report.html%00", "//outside/secret.txt", "http://127.0.0.1:8080/outfile", "*", "/sub/..",
	} {
		f.Add(p, own)
	}
	f.Add("/report.html", "evil.example")
	f.Add("/report.html", "LOCALHOST:8080")
	f.Add("/report.html", "")
	f.Fuzz(func(t *testing.T, target, host string) {
		var reqs []*http.Request
		text := "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
		if r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(text))); err == nil {
			reqs = append(reqs, r)
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path, r.URL.RawPath, r.Host = target, "", host
		reqs = append(reqs, r)
		for _, r := range reqs {
			w := httptest.NewRecorder()
			hd.ServeHTTP(w, r)
			body := w.Body.Bytes()
			if w.Code >= 500 {
				t.Fatalf("%q (path %q, Host %q): status %d", target, r.URL.Path, r.Host, w.Code)
			}
			if bytes.Contains(body, h.secret) {
				t.Fatalf("%q (path %q, Host %q): served the secret outside the run directory", target, r.URL.Path, r.Host)
			}
			if w.Code != http.StatusOK {
				continue
			}
			if !hd.hosts[strings.ToLower(r.Host)] {
				t.Fatalf("%q: Host %q answered with 200", target, r.Host)
			}
			inside := false
			for _, b := range h.inside {
				inside = inside || bytes.Equal(body, b)
			}
			if !inside {
				t.Fatalf("%q (path %q): 200 with %.100q, not a file of the run directory", target, r.URL.Path, body)
			}
		}
	})
}
