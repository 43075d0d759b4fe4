package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Page is the file "/" serves: the run's report.
const Page = "report.html"

// Policy is the Content-Security-Policy of every answer. report.html is
// one offline file (host/report): an inline <style>, inline <script>s, a
// data: icon and canvases; its own <meta> policy is the first four
// directives. The rest only a header can say (frame-ancestors) or close
// what default-src does not (base-uri, form-action). No sandbox: a
// sandboxed page's origin is opaque, and browsers have refused
// history.replaceState there, which report.html calls.
const Policy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// types are the Content-Types of the files a run directory holds, fixed
// here so that they do not depend on the machine's mime.types; other
// extensions fall back to mime.TypeByExtension, then to
// application/octet-stream (never sniffed).
var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".json": "application/json",
	".csv":  "text/csv; charset=utf-8",
	".md":   "text/markdown; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	".toml": "text/plain; charset=utf-8",
	".log":  "text/plain; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".pdf":  "application/pdf",
}

// ContentType is the Content-Type served for a file called name.
func ContentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := types[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Handler serves one run directory. Its zero value is not usable: make
// one with New, and Close it when done.
type Handler struct {
	root  *os.Root
	hosts map[string]bool
}

// New returns the handler of the run directory dir for a server
// listening on 127.0.0.1:port: it answers requests for Host
// 127.0.0.1:port and localhost:port.
func New(dir string, port int) (*Handler, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("serve %s: port %d: want 1..65535", dir, port)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", dir, err)
	}
	p := strconv.Itoa(port)
	return &Handler{root: root, hosts: map[string]bool{
		"127.0.0.1:" + p: true,
		"localhost:" + p: true,
	}}, nil
}

// Close releases the run directory.
func (h *Handler) Close() error { return h.root.Close() }

// ServeHTTP answers one request (see the package's documentation).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Content-Security-Policy", Policy)
	if !h.hosts[strings.ToLower(r.Host)] {
		http.Error(w, fmt.Sprintf("403 forbidden: Host %q is not this server (it answers Host 127.0.0.1:PORT or localhost:PORT)", r.Host), http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	name, dir, err := Name(r.URL.Path)
	if err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	f, fi, err := h.open(name)
	if errors.Is(err, errDir) {
		if !dir {
			// A directory asked for without its "/": there, so that the
			// links of its index.html resolve inside it.
			u := url.URL{Path: path.Base(name) + "/", RawQuery: r.URL.RawQuery}
			hd.Set("Location", u.String())
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		name = path.Join(name, "index.html")
		f, fi, err = h.open(name)
	} else if err == nil && dir {
		f.Close()
		err = errNotFound // a file asked for as a directory ("report.html/")
	}
	if err != nil {
		// Missing, outside, not regular, unreadable: one answer, which
		// says nothing of what lies outside the run directory.
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	hd.Set("Content-Type", ContentType(name))
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

var (
	errDir      = errors.New("a directory")
	errNotFound = errors.New("not a regular file inside the run directory")
)

// open opens name, a path inside the run directory, if it is a regular
// file; a directory is errDir. Stat first, so that nothing but a regular
// file (or a directory) is ever opened, then O_NONBLOCK and Fstat, so
// that a FIFO swapped in between neither blocks the open nor is read.
func (h *Handler) open(name string) (*os.File, fs.FileInfo, error) {
	fi, err := h.root.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, errDir
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errNotFound
	}
	f, err := h.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, errNotFound
	}
	return f, fi, nil
}

// Name is the run directory's file that a request's (percent-decoded)
// path names, and whether the path asked for a directory (it ends in
// "/"); "/" is Page. The path must be canonical: it starts with "/", holds
// no NUL and no backslash, and no element of it is empty, "." or "..".
func Name(p string) (name string, dir bool, err error) {
	if !strings.HasPrefix(p, "/") {
		return "", false, fmt.Errorf("path %q does not start with /", p)
	}
	if strings.ContainsAny(p, "\x00\\") {
		return "", false, fmt.Errorf("path %q holds a NUL or a backslash", p)
	}
	if p == "/" {
		return Page, false, nil
	}
	name = p[1:]
	if strings.HasSuffix(name, "/") {
		name, dir = name[:len(name)-1], true
	}
	for _, e := range strings.Split(name, "/") {
		if e == "" || e == "." || e == ".." {
			return "", false, fmt.Errorf("path %q is not canonical (an empty, \".\" or \"..\" element)", p)
		}
	}
	return name, dir, nil
}

// Serve serves the run directory dir on 127.0.0.1 at a free port until
// ctx ends, calling listening with the report's URL once it listens.
func Serve(ctx context.Context, dir string, listening func(url string)) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("serve %s: listening on 127.0.0.1: %w", dir, err)
	}
	h, err := New(dir, ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		ln.Close()
		return err
	}
	defer h.Close()
	// DisableGeneralOptionsHandler: "OPTIONS *" too is the handler's (405).
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, DisableGeneralOptionsHandler: true}
	listening(fmt.Sprintf("http://%s/%s", ln.Addr(), Page))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve %s: %w", dir, err)
	}
}
