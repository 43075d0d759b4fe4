package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/uaxai/uaxai/host/analysis"
	"github.com/uaxai/uaxai/host/recipe"
)

// runTinyRecording runs tinyRecipe on the shipped demonstration
// recording (five windows of 640 samples).
func runTinyRecording(t *testing.T) *Outcome {
	t.Helper()
	dir := t.TempDir()
	file, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings", "demo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	src := tinyRecipe(filepath.Join(dir, "runs"), fmt.Sprintf("\n[recording]\nfile = %q\nnominal = 212.13\n", file))
	r, err := recipe.Parse("tiny.toml", []byte(src), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// pageData is the JSON the page's script reads.
func pageData(t *testing.T, page []byte) (recs []struct {
	P, E, Key string
	R         int
	Ns, Draws int
	Dp        []float64
}, windows []json.RawMessage) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("report.html has no data script")
	}
	var d struct {
		Records []struct {
			P, E, Key string
			R         int
			Ns, Draws int
			Dp        []float64
		}
		Windows []json.RawMessage
	}
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatal(err)
	}
	return d.Records, d.Windows
}

// TestReportHTML: a run writes report.html beside tables.md, offline (no
// address it could fetch: the one URL is SVG's namespace), with every
// table of tables.md, the per-class chart, the first ExplorePerClass
// records of each class a pair (the tiny run's 2 splits x 2 records of
// each class: the first 2 of each class, split 0's), every draw's
// probability, and the time writing it took in manifest.json.
func TestReportHTML(t *testing.T) {
	o := runTiny(t, t.TempDir(), 2, nil, &notes{})
	page := read(t, filepath.Join(o.Dir, "report.html"))
	md := string(read(t, filepath.Join(o.Dir, "tables.md")))
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "## ") && l != "## Notes" && !bytes.Contains(page, []byte(strings.TrimPrefix(l, "## "))) {
			t.Errorf("report.html lacks the table %q", l)
		}
	}
	for _, u := range regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^"' )]*`).FindAll(page, -1) {
		if string(u) != "http://www.w3.org/2000/svg" {
			t.Errorf("report.html names an address: %s", u)
		}
	}
	for _, s := range []string{`<svg`, `id="next"`, `id="panel"`} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("report.html lacks %s", s)
		}
	}
	recs, _ := pageData(t, page)
	// Each pair explains the same records: 15 scored classes (normal has
	// an empty mask) x ExplorePerClass, from split test-0 (2 a class).
	pairs := map[string]int{}
	for _, r := range recs {
		pairs[r.P+"/"+r.E]++
		if !strings.HasPrefix(r.Key, "test-0/") || len(r.Dp) != r.Draws || r.Ns != r.Draws {
			t.Errorf("record %s under %s: %d draw probabilities, %d members, %d draws", r.Key, r.P, len(r.Dp), r.Ns, r.Draws)
		}
	}
	if len(pairs) != 2 || pairs["Deterministic/explainer.occlusion"] != 15*analysis.ExplorePerClass || pairs["Ensemble/explainer.occlusion"] != 15*analysis.ExplorePerClass {
		t.Errorf("records a pair: %v, want 15 x %d each", pairs, analysis.ExplorePerClass)
	}
	var man struct {
		Timings map[string]float64 `json:"timings_s"`
	}
	if err := json.Unmarshal(read(t, filepath.Join(o.Dir, "manifest.json")), &man); err != nil || man.Timings["report.html"] <= 0 {
		t.Errorf("manifest timings %v (%v): want report.html's", man.Timings, err)
	}
	t.Logf("report.html: %d bytes, %d records, written in %.3f s", len(page), len(recs), man.Timings["report.html"])
}

// chromium is Debian's headless browser (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: the browser test of report.html skips (apt-get install chromium; .ci/run does)")
	return ""
}

// cdp is a DevTools protocol client of one page: calls and their answers,
// and the events it was sent.
type cdp struct {
	ws     *websocket.Conn
	mu     sync.Mutex
	id     int
	wait   map[int]chan json.RawMessage
	events chan struct {
		Method string
		Params json.RawMessage
	}
}

func dialCDP(t *testing.T, url string) *cdp {
	ws, err := websocket.Dial(url, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatal(err)
	}
	c := &cdp{ws: ws, wait: map[int]chan json.RawMessage{}, events: make(chan struct {
		Method string
		Params json.RawMessage
	}, 1000)}
	go func() {
		for {
			var m struct {
				ID     int             `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := websocket.JSON.Receive(ws, &m); err != nil {
				return
			}
			if m.ID != 0 {
				c.mu.Lock()
				ch := c.wait[m.ID]
				c.mu.Unlock()
				if m.Error != nil {
					m.Result = append([]byte(`{"error":`), append(m.Error, '}')...)
				}
				ch <- m.Result
				continue
			}
			select {
			case c.events <- struct {
				Method string
				Params json.RawMessage
			}{m.Method, m.Params}:
			default:
			}
		}
	}()
	return c
}

func (c *cdp) call(t *testing.T, method string, params any, out any) {
	t.Helper()
	c.mu.Lock()
	c.id++
	id := c.id
	ch := make(chan json.RawMessage, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	if err := websocket.JSON.Send(c.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if bytes.HasPrefix(r, []byte(`{"error":`)) {
			t.Fatalf("%s: %s", method, r)
		}
		if out != nil {
			if err := json.Unmarshal(r, out); err != nil {
				t.Fatalf("%s: %v: %s", method, err, r)
			}
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer from chromium", method)
	}
}

// eval evaluates a JavaScript expression in the page and returns its
// value as JSON.
func (c *cdp) eval(t *testing.T, expr string) string {
	t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception json.RawMessage `json:"exceptionDetails"`
	}
	c.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.Exception != nil {
		t.Fatalf("%s: %s", expr, r.Exception)
	}
	return string(r.Result.Value)
}

// click presses and releases the left button at the centre of the
// element the selector names, at a fraction fx of its width.
func (c *cdp) click(t *testing.T, sel string, fx float64) {
	t.Helper()
	var b struct{ X, Y, W, H float64 }
	c.eval(t, fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, sel))
	if err := json.Unmarshal([]byte(c.eval(t, fmt.Sprintf(`(function(){var r=document.querySelector(%q).getBoundingClientRect();return {X:r.left,Y:r.top,W:r.width,H:r.height};})()`, sel))), &b); err != nil {
		t.Fatal(err)
	}
	x, y := b.X+fx*b.W, b.Y+b.H/2
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		c.call(t, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil)
	}
}

// TestReportHTMLInChromium: the report of a recording run, loaded in
// headless chromium through the DevTools protocol: no console error or
// exception; a panel renders (data-record); a real click on "next" moves
// to the next record, and one on the timeline's fourth window shows that
// window's panel; a screenshot is not of one colour.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	o := runTinyRecording(t)
	page := filepath.Join(o.Dir, "report.html")
	recs, windows := pageData(t, read(t, page))
	if len(windows) != 10 || len(recs) != 10 { // 5 windows x 2 posteriors
		t.Fatalf("%d windows and %d records in the page, want 10 and 10", len(windows), len(recs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,2000", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var port string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`DevTools listening on ws://127\.0\.0\.1:(\d+)/`).FindStringSubmatch(sc.Text()); m != nil {
			port = m[1]
			break
		}
	}
	if port == "" {
		t.Fatal("chromium did not say its DevTools port")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ws string
	for _, tg := range targets {
		if tg.Type == "page" {
			ws = tg.WebSocketDebuggerURL
		}
	}
	if ws == "" {
		t.Fatalf("no page among chromium's targets %+v", targets)
	}
	c := dialCDP(t, ws)
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		c.call(t, m, map[string]any{}, nil)
	}
	c.call(t, "Page.navigate", map[string]any{"url": "file://" + page}, nil)
	var problems []string
	loaded := false
	deadline := time.After(60 * time.Second)
	collect := func(until func() bool) {
		for !until() {
			select {
			case e := <-c.events:
				switch e.Method {
				case "Page.loadEventFired":
					loaded = true
				case "Runtime.exceptionThrown":
					problems = append(problems, string(e.Params))
				case "Runtime.consoleAPICalled":
					if bytes.Contains(e.Params, []byte(`"type":"error"`)) {
						problems = append(problems, string(e.Params))
					}
				case "Log.entryAdded":
					if bytes.Contains(e.Params, []byte(`"level":"error"`)) {
						problems = append(problems, string(e.Params))
					}
				}
			case <-deadline:
				t.Fatal("the page did not load in 60 s")
			}
		}
	}
	collect(func() bool { return loaded })
	first := c.eval(t, `document.querySelector("[data-record]").getAttribute("data-record")`)
	if first != `"`+recs[0].Key+`"` {
		t.Errorf("the first panel is record %s, want %q", first, recs[0].Key)
	}
	if n := c.eval(t, `document.querySelectorAll("#panel canvas").length`); n == "0" {
		t.Error("the panel has no plots")
	}
	c.click(t, "#next", 0.5)
	second := c.eval(t, `document.getElementById("panel").getAttribute("data-record")`)
	if second == first || second != fmt.Sprintf("%q", strings.Replace(recs[0].Key, "/0", "/1", 1)) {
		t.Errorf("after a click on next: record %s (before %s), want the window 1", second, first)
	}
	c.click(t, "#tl", 3.5/5) // the fourth of five windows
	if got := c.eval(t, `document.getElementById("panel").getAttribute("data-record")`); got != fmt.Sprintf("%q", strings.Replace(recs[0].Key, "/0", "/3", 1)) {
		t.Errorf("after a click on the timeline's window 3: record %s", got)
	}
	var shot struct{ Data string }
	c.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	colours := map[[4]uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
		for x := bd.Min.X; x < bd.Max.X; x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("the screenshot (%v) has %d colours: blank", bd, len(colours))
	}
	if out := os.Getenv("UAXAI_SCREENSHOT"); out != "" {
		_ = os.WriteFile(out, raw, 0o644)
	}
	time.Sleep(200 * time.Millisecond)
	collect(func() bool { return len(c.events) == 0 })
	for _, p := range problems {
		t.Errorf("console: %s", p)
	}
}
