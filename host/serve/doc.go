// Package serve serves a run directory to a browser on the loopback
// interface, for uaxai view --serve. A run directory may come from
// someone else (a colleague's archive, a download), and any web page the
// browser has open may send requests to the server, so the server
// answers only what a browser showing the run's report needs:
//
//   - only the regular files inside the run directory, opened through an
//     os.Root: a path that leaves the directory (a "..", a symbolic link
//     that is absolute or resolves outside it) is refused when it is
//     opened, with no check-then-open race. A relative symbolic link that
//     resolves inside the directory is served as its target is; a FIFO, a
//     device, a socket is refused without being opened (Stat) or without
//     blocking if one is swapped in after the Stat (O_NONBLOCK, Fstat);
//   - no directory listings: "/" is report.html, a directory "D/" its
//     index.html if that is a regular file inside (404 otherwise), "D" a
//     redirect to "D/";
//   - a request's path must be canonical: it starts with "/", holds no NUL
//     and no backslash, no "." or ".." element and no empty one (once
//     percent-decoded, so "%2e%2e" is ".."); anything else is 400;
//   - only requests whose Host is the server's own address
//     (127.0.0.1:PORT or localhost:PORT) are answered, 403 otherwise, so
//     that a page whose name was rebound to 127.0.0.1 (DNS rebinding)
//     cannot read the directory;
//   - only GET and HEAD (405 otherwise);
//   - every answer says its Content-Type (by the file's extension),
//     X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer,
//     Cross-Origin-Resource-Policy: same-origin, and a
//     Content-Security-Policy that lets report.html's inline script and
//     style run and nothing else load (no fetch, no frame, no form, no
//     other origin's resource).
//
// uaxai view --serve: a run directory over HTTP on 127.0.0.1 at a free
// port. It opens the directory as an os.Root (a .. or a symbolic link that
// is absolute or resolves outside is refused when the file is opened, with
// no check-then-open race; a relative link resolving inside is served),
// serves regular files only (Root.Stat first, then O_NONBLOCK and Fstat,
// so a FIFO or device is 404 and never blocks), no listings (/ is
// report.html, D/ its index.html), canonical paths only (Name: no empty, .
// or .. element, no NUL or backslash, after percent-decoding; 400), its
// own Host only (127.0.0.1:PORT, localhost:PORT; 403, against DNS
// rebinding), GET and HEAD only (405, OPTIONS * included); every answer
// has its Content-Type by extension (a fixed table, then mime, then octet-
// stream), nosniff, Referrer-Policy: no-referrer, Cross-Origin-Resource-
// Policy: same-origin and Policy, report.html's own <meta> policy (a test
// checks that it is kept) plus base-uri, form-action and frame-ancestors
// 'none' (no sandbox: report.html calls history.replaceState, which
// browsers have refused in a sandbox).
//
// # Tests
//
//   - host/serve/serve_test.go: uaxai view --serve against a hostile run
//     directory (links to /, to a secret outside by absolute and relative
//     paths, to the directory itself, a FIFO, an empty directory), by raw
//     requests on a real server: .. raw and %2e%2e, backslash, NUL, //,
//     foreign and missing Hosts, POST, PUT, OPTIONS *; nothing outside is
//     served, the FIFO is never held open, every header is set.
//     FuzzViewPath: any path and Host, no 5xx, never the secret, a 200
//     only with a file inside. cmd/uaxai/view_test.go checks that the
//     command uses that server.
package serve
