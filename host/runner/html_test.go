package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/uaxai/uaxai/host/analysis"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/internal/testdep"
)

// runTinyRecording runs tinyRecipe on the shipped demonstration
// recording (five windows of 640 samples).
func runTinyRecording(t *testing.T) *Outcome { return runTinyRecordingWith(t, "") }

// runTinyRecordingWith is runTinyRecording with more recipe text before
// [recording].
func runTinyRecordingWith(t *testing.T, extra string) *Outcome {
	t.Helper()
	dir := t.TempDir()
	file, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings", "demo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	return runTinyIn(t, dir, extra+fmt.Sprintf("\n[recording]\nfile = %q\nnominal = 212.13\n", file))
}

// runTinyIn runs tinyRecipe with extra, its runs under dir, on 2
// workers.
func runTinyIn(t *testing.T, dir, extra string) *Outcome {
	t.Helper()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), extra)), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// pageRecord is a record of the JSON the page's script reads.
type pageRecord struct {
	P, E, Key string
	R         int
	Ns, Draws int
	C, B      int
	Mem       string
	Dp        []float64
}

// pageData is the JSON the page's script reads.
func pageData(t *testing.T, page []byte) (recs []pageRecord, windows []json.RawMessage) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("report.html has no data script")
	}
	var d struct {
		Records []pageRecord
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

// TestReportHTMLReplicates: a run of 2 replicates writes each
// replicate's records in report.html under its own name, "label
// (replicate r)", the same records under both, with the replicate's own
// maps (the replicates train other networks: the members differ).
func TestReportHTMLReplicates(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "\n[replicates]\ncount = 2\n")), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := pageData(t, read(t, filepath.Join(o.Dir, "report.html")))
	mem := map[string]string{} // "posterior (replicate r)/key" -> members
	keys := map[string][]string{}
	for _, rc := range recs {
		mem[rc.P+"/"+rc.Key] = rc.Mem
		keys[rc.P] = append(keys[rc.P], rc.Key)
	}
	for _, p := range []string{"Deterministic", "Ensemble"} {
		r0, r1 := p+" (replicate 0)", p+" (replicate 1)"
		if len(keys[r0]) != 15*analysis.ExplorePerClass || fmt.Sprint(keys[r0]) != fmt.Sprint(keys[r1]) {
			t.Fatalf("%s: records %v and %v, want the same 15 x %d under both replicates (pairs %d)", p, keys[r0], keys[r1], analysis.ExplorePerClass, len(keys))
		}
		same := 0
		for _, k := range keys[r0] {
			if mem[r0+"/"+k] == mem[r1+"/"+k] {
				same++
			}
		}
		if same == len(keys[r0]) {
			t.Errorf("%s: every record has the same maps under both replicates", p)
		}
	}
}

// chromium is Debian's headless browser (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	testdep.Skip(t, testdep.Chromium, "no chromium on PATH: the browser test of report.html skips (apt-get install chromium; .ci/run does)")
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

// hover moves the mouse (no button) to the fractions (fx, fy) of the
// element the selector names, and returns the tip's text.
func (c *cdp) hover(t *testing.T, sel string, fx, fy float64) string {
	t.Helper()
	var b struct{ X, Y, W, H float64 }
	c.eval(t, fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, sel))
	if err := json.Unmarshal([]byte(c.eval(t, fmt.Sprintf(`(function(){var r=document.querySelector(%q).getBoundingClientRect();return {X:r.left,Y:r.top,W:r.width,H:r.height};})()`, sel))), &b); err != nil {
		t.Fatal(err)
	}
	c.call(t, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": b.X + fx*b.W, "y": b.Y + fy*b.H}, nil)
	var tip string
	if err := json.Unmarshal([]byte(c.eval(t, `document.getElementById("tip").textContent`)), &tip); err != nil {
		t.Fatal(err)
	}
	return tip
}

// browser is a headless chromium with one page under DevTools.
type browser struct {
	*cdp
	loaded   bool
	problems []string
}

// openChromium starts chromium (killed at the test's end) and connects
// to its page.
func openChromium(t *testing.T) *browser {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	// The profile is not a t.TempDir: chromium's helper processes outlive
	// the killed browser by a moment and still write there, which made
	// the testing package's removal fail the test; it is removed here,
	// retried until they are gone.
	profile, err := os.MkdirTemp("", "uaxai-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := os.RemoveAll(profile); err == nil || time.Now().After(deadline) {
				if err != nil {
					t.Logf("chromium profile %s left behind: %v", profile, err)
				}
				return
			}
		}
	})
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--user-data-dir="+profile, "--window-size=1280,2000", "about:blank")
	// Killed, chromium leaves its singleton socket's directory
	// (org.chromium.Chromium.*) in TMPDIR: the profile's, removed above.
	cmd.Env = append(os.Environ(), "TMPDIR="+profile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
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
	c := &browser{cdp: dialCDP(t, ws)}
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		c.call(t, m, map[string]any{}, nil)
	}
	return c
}

// collect reads the page's events until `until` holds, noting its
// exceptions and console errors.
func (c *browser) collect(t *testing.T, until func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !until() {
		select {
		case e := <-c.events:
			switch e.Method {
			case "Page.loadEventFired":
				c.loaded = true
			case "Runtime.exceptionThrown":
				c.problems = append(c.problems, string(e.Params))
			case "Runtime.consoleAPICalled":
				if bytes.Contains(e.Params, []byte(`"type":"error"`)) {
					c.problems = append(c.problems, string(e.Params))
				}
			case "Log.entryAdded":
				if bytes.Contains(e.Params, []byte(`"level":"error"`)) {
					c.problems = append(c.problems, string(e.Params))
				}
			}
		case <-deadline:
			t.Fatal("the page did not load in 60 s")
		}
	}
}

// open loads the file and waits for its load event.
func (c *browser) open(t *testing.T, file string) {
	t.Helper()
	c.loaded = false
	c.call(t, "Page.navigate", map[string]any{"url": "file://" + file}, nil)
	c.collect(t, func() bool { return c.loaded })
}

// finish reports the page's console errors and exceptions.
func (c *browser) finish(t *testing.T) {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	c.collect(t, func() bool { return len(c.events) == 0 })
	for _, p := range c.problems {
		t.Errorf("console: %s", p)
	}
}

// memberAt is member s's value at column n of channel 0 in the page's
// record (its base64 float32 data).
func memberAt(t *testing.T, mem string, s, C, B, n int) float32 {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(mem)
	if err != nil {
		t.Fatal(err)
	}
	i := 4 * (s*C*B + n)
	return math.Float32frombits(binary.LittleEndian.Uint32(b[i : i+4]))
}

// hoverValue is the heat map's tip: its column (a sample, or a thinned
// column's first and last samples), draw and value.
var hoverValue = regexp.MustCompile(`^samples? (\d+)(?:\.\.(\d+))?.*\ndraw (\d+): R = (\S+)`)

// TestReportHTMLInChromium: the report of a recording run, loaded in
// headless chromium through the DevTools protocol: no console error or
// exception; a panel renders (data-record); hovering the heat map shows
// the member's exact float32 value (the page data's, read back in Go);
// a real click on "next" moves to the next record, and one on the
// timeline's fourth window shows that window's panel; a screenshot is not
// of one colour.
func TestReportHTMLInChromium(t *testing.T) {
	c := openChromium(t)
	o := runTinyRecording(t)
	page := filepath.Join(o.Dir, "report.html")
	recs, windows := pageData(t, read(t, page))
	if len(windows) != 10 || len(recs) != 10 { // 5 windows x 2 posteriors
		t.Fatalf("%d windows and %d records in the page, want 10 and 10", len(windows), len(recs))
	}
	var meta struct {
		Unit      string
		F0        float64
		Trigger   *float64
		PeakUnits []float64
		Units     []string
	}
	if m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(read(t, page)); m == nil || json.Unmarshal(m[1], &meta) != nil ||
		meta.Unit != "p.u." || meta.F0 != 50 || meta.Trigger == nil || math.Abs(*meta.Trigger-0.2) > 1e-9 {
		t.Errorf("the page's unit %q, f0 %v, trigger %v; want p.u., 50 and demo.cfg's 0.2 s", meta.Unit, meta.F0, meta.Trigger)
	}
	// 1 p.u. of demo.cfg's channel VA is sqrt(2) x the recipe's nominal 212.13 V
	if len(meta.PeakUnits) != 1 || math.Abs(meta.PeakUnits[0]-math.Sqrt2*212.13) > 1e-9 || len(meta.Units) != 1 || meta.Units[0] != "V" {
		t.Errorf("the page's peak units %v %q; want sqrt(2) x 212.13 V", meta.PeakUnits, meta.Units)
	}
	c.open(t, page)
	first := c.eval(t, `document.querySelector("[data-record]").getAttribute("data-record")`)
	if first != `"`+recs[0].Key+`"` {
		t.Errorf("the first panel is record %s, want %q", first, recs[0].Key)
	}
	if n := c.eval(t, `document.querySelectorAll("#panel canvas").length`); n == "0" {
		t.Error("the panel has no plots")
	}
	for _, at := range [][2]float64{{0.31, 0.2}, {0.77, 0.1}} {
		tip := c.hover(t, "#panel .heat", at[0], at[1])
		m := hoverValue.FindStringSubmatch(tip)
		if m == nil {
			t.Fatalf("the heat map's tip %q", tip)
		}
		n, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[3])
		v, err := strconv.ParseFloat(m[4], 32)
		want := memberAt(t, recs[0].Mem, s, recs[0].C, recs[0].B, n)
		if err != nil || m[2] != "" || float32(v) != want {
			t.Errorf("hover at %v: %q; want draw %d sample %d's value %v exactly", at, tip, s, n, want)
		}
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
	// The record list's numbers sit inside its box (a two-digit number
	// was clipped to "0." when the markers hung outside).
	if got := c.eval(t, `getComputedStyle(document.getElementById("reclist")).listStylePosition`); got != `"inside"` {
		t.Errorf("the record list's markers are %s, want inside", got)
	}
	// report.html#record=K, opened afresh, shows record K and scrolls to it.
	c.loaded = false
	c.call(t, "Page.navigate", map[string]any{"url": "about:blank"}, nil)
	c.collect(t, func() bool { return c.loaded })
	c.open(t, page+"#record=2")
	if got := c.eval(t, `document.getElementById("panel").getAttribute("data-record")`); got != fmt.Sprintf("%q", strings.Replace(recs[0].Key, "/0", "/2", 1)) {
		t.Errorf("report.html#record=2 shows record %s", got)
	}
	// scrolled to the panel, or as far as the page goes
	if got := c.eval(t, `(function () { var p = document.getElementById("panel").getBoundingClientRect().top + scrollY;
		var want = Math.min(p, document.documentElement.scrollHeight - innerHeight); return scrollY > 0 && Math.abs(scrollY - want) <= 1 ? "scrolled" : scrollY + " of " + want; })()`); got != `"scrolled"` {
		t.Errorf("report.html#record=2: the view is at %s, not scrolled to the panel", got)
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
	c.finish(t)
}

// TestReportHTMLThinnedInChromium: a page of a long record (T = 20000
// samples, drawn in report.MaxColumns columns) and a long recording's
// timeline (3000 windows a posterior, in report.MaxTimeline bars) runs
// without a console error; the heat map's tip names its column's samples
// and shows the column's value of largest |R| exactly (the page data's);
// a click on the timeline's first bar shows the record of its windows.
func TestReportHTMLThinnedInChromium(t *testing.T) {
	c := openChromium(t)
	const C, T, S, W = 1, 20000, 6, 3000
	r := rand.New(rand.NewPCG(4, 4))
	vec := func() []float32 {
		x := make([]float32, C*T)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	e := report.Explored{Posterior: "P", Explainer: "E", SplitName: "recording", Record: 0, Label: -1, Pred: 1, Prob: 0.6, Channels: C, Draws: S,
		Wave: vec(), Mean: vec(), Q05: vec(), Q95: vec(), Variance: vec(), CV: vec()}
	for range S {
		e.Members = append(e.Members, vec())
	}
	var ws []report.Window
	for _, p := range []string{"P", "Q"} {
		for i := range W {
			ws = append(ws, report.Window{Posterior: p, Window: i, Start: 0.2 * float64(i), Length: 0.2, Class: []string{"normal", "sag"}[i%7/6],
				Probability: r.Float64(), MutualInfo: r.Float64(), Agreement: r.Float64()})
		}
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, report.HTML{Title: "long", Records: []report.Explored{e}, Windows: ws, ClassNames: []string{"normal", "sag"}, Fs: 3200}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, windows := pageData(t, buf.Bytes())
	if len(windows) != 2*report.MaxTimeline || recs[0].B != report.MaxColumns {
		t.Fatalf("%d bars, %d columns; want %d and %d", len(windows), recs[0].B, 2*report.MaxTimeline, report.MaxColumns)
	}
	c.open(t, file)
	tip := c.hover(t, "#panel .heat", 0.43, 0.5)
	m := hoverValue.FindStringSubmatch(tip)
	if m == nil || m[2] == "" {
		t.Fatalf("the thinned heat map's tip %q names no samples a..b", tip)
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	s, _ := strconv.Atoi(m[3])
	v, err := strconv.ParseFloat(m[4], 32)
	col := ((a+1)*report.MaxColumns+T-1)/T - 1 // the column of sample a
	if lo, hi := col*T/report.MaxColumns, (col+1)*T/report.MaxColumns-1; lo != a || hi != b {
		t.Fatalf("tip %q: samples %d..%d are no column (column %d: %d..%d)", tip, a, b, col, lo, hi)
	}
	want := e.Members[s][a]
	for _, u := range e.Members[s][a : b+1] {
		if math.Abs(float64(u)) > math.Abs(float64(want)) {
			want = u
		}
	}
	if err != nil || float32(v) != want || memberAt(t, recs[0].Mem, s, C, report.MaxColumns, col) != want {
		t.Errorf("tip %q: want draw %d's largest |R| of samples %d..%d, %v", tip, s, a, b, want)
	}
	c.click(t, "#tl", 0.5/report.MaxTimeline)
	if got := c.eval(t, `document.getElementById("panel").getAttribute("data-record")`); got != `"recording/0"` {
		t.Errorf("after a click on the first bar: record %s", got)
	}
	c.finish(t)
}

// TestReportHTMLEngineerInChromium: what an engineer reads in a
// recording's report, drawn by headless chromium from a page of a
// two-phase window (phase A of amplitude 1, phase B of 0.1, a deep sag)
// and a timeline of ten windows with a trigger at 0.35 s:
//   - the phases share one y axis: phase B's drawn line is about a tenth
//     as tall as phase A's (each scaled to its own range they would be
//     the same height), and the axis has tick labels;
//   - the trigger is a dashed line at its time on the timeline, and the
//     recording's waveform is drawn under the windows the page holds;
//   - the event table lists the events, the out-of-distribution one
//     marked with its count;
//   - the window's panel carries its out-of-distribution badge.
func TestReportHTMLEngineerInChromium(t *testing.T) {
	c := openChromium(t)
	const C, T, S = 2, 640, 3
	wave := make([]float32, C*T)
	for i := range T {
		v := float32(math.Sin(2 * math.Pi * float64(i) / 64))
		wave[i], wave[T+i] = v, 0.1*v
	}
	flat := func() []float32 { return make([]float32, C*T) }
	e := report.Explored{Posterior: "P", Explainer: "E", SplitName: "recording", Record: 3, Label: -1, Pred: 1, Prob: 0.99, Channels: C, ChannelNames: []string{"VA", "VB"},
		Draws: S, Wave: wave, Mean: flat(), Q05: flat(), Q95: flat(), Variance: flat(), CV: flat(),
		OOD: "outside what the model was trained on: RMS VB 0.0707, training 0.61-0.78 (sag)"}
	for range S {
		e.Members = append(e.Members, flat())
	}
	var ws []report.Window
	for i := range 10 {
		ws = append(ws, report.Window{Posterior: "P", Window: i, Start: 0.1 * float64(i), Length: 0.2, Class: []string{"normal", "sag"}[min(i/3, 1)],
			Probability: 0.9, Agreement: 1, OOD: i >= 3 && i < 5, OODReason: "outside"})
	}
	evs := []report.Event{
		{Posterior: "P", Class: "normal", First: 0, Last: 2, StartMS: -350, EndMS: 150, Origin: "trigger", Probability: 0.9},
		{Posterior: "P", Class: "sag", First: 3, Last: 9, StartMS: -50, EndMS: 750, Origin: "trigger", Probability: 0.9, TopChannel: "VB", TopShare: 0.8, OOD: 2},
	}
	var buf bytes.Buffer
	h := report.HTML{Title: "engineer", Records: []report.Explored{e}, Windows: ws, ClassNames: []string{"normal", "sag"}, Fs: 3200,
		Unit: "p.u.", F0: 50, Trigger: 0.35, Events: evs, PeakUnits: []float64{math.Sqrt2 * 230e3, math.Sqrt2 * 230e3}, Units: []string{"V", "V"}}
	if err := report.WriteHTML(&buf, h); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c.open(t, file)
	// Per channel row of the waveform, the rows of pixels the line
	// darkens, away from the channel's name and the tick labels; and
	// whether the label column holds dark pixels.
	heights := c.eval(t, `(function () {
		var cv = document.querySelector("#panel canvas.wave"), g = cv.getContext("2d"), W = cv.width, H = cv.height, C = 2, out = [];
		var px = g.getImageData(0, 0, W, H).data;
		function dark(x, y) { var k = 4 * (y * W + x); return px[k + 3] > 128 && px[k] < 90 && px[k + 1] < 90 && px[k + 2] < 90; }
		for (var ch = 0; ch < C; ch++) {
			var lo = Infinity, hi = -Infinity;
			for (var y = Math.ceil(ch * H / C); y < (ch + 1) * H / C; y++) for (var x = 60; x < W - 100; x++) if (dark(x, y)) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
			out.push(hi - lo + 1);
		}
		var labels = 0;
		for (var y = 0; y < H; y++) for (var x = W - 34; x < W; x++) if (dark(x, y)) labels++;
		out.push(labels);
		return out.join(" ");
	})()`)
	var hA, hB, labels int
	if _, err := fmt.Sscanf(strings.Trim(heights, `"`), "%d %d %d", &hA, &hB, &labels); err != nil {
		t.Fatalf("heights %s: %v", heights, err)
	}
	if !(hB*5 < hA && hB >= 1) || labels < 20 {
		t.Errorf("phase A's line is %d px tall, phase B's (a tenth of A's amplitude) %d px, %d dark pixels of tick labels: want B under a fifth of A on one axis, and labels", hA, hB, labels)
	}
	// The axis also reads in the recording's unit: a 230 kV (RMS) line's
	// 1 p.u. is sqrt(2) x 230 kV; the hover gives a sample's value in kV.
	tip := c.hover(t, "#panel canvas.wave", 0.3, 0.25)
	m := regexp.MustCompile(`x = (-?[0-9.]+) \((-?[0-9.]+) kV\)`).FindStringSubmatch(tip)
	if m == nil {
		t.Fatalf("the waveform's tip %q gives no value in kV", tip)
	}
	pu, _ := strconv.ParseFloat(m[1], 64)
	kv, _ := strconv.ParseFloat(m[2], 64)
	if want := pu * math.Sqrt2 * 230; math.Abs(kv-want) > 0.01*math.Abs(want)+0.5 {
		t.Errorf("tip %q: %v kV, want %v p.u. x sqrt(2) x 230 kV = %.4g", tip, kv, pu, want)
	}
	// The trigger's dashed line: purple pixels in its column, 0.35 s into
	// the 0..1.1 s the windows span.
	trig := c.eval(t, `(function () {
		var cv = document.getElementById("tl"), g = cv.getContext("2d"), W = cv.width, H = cv.height;
		var x = Math.round(0.35 / 1.1 * W), n = 0, px = g.getImageData(x - 1, 0, 3, H).data;
		for (var k = 0; k < px.length; k += 4) if (px[k] > 100 && px[k] < 140 && px[k + 1] < 70 && px[k + 2] > 120) n++;
		return n;
	})()`)
	if n, _ := strconv.Atoi(trig); n < 20 {
		t.Errorf("%s purple pixels at the trigger's time on the timeline, want its dashed line", trig)
	}
	// The recording's waveform under its windows: drawn under window 3
	// (the page holds its record), nothing under window 6 (it does not).
	strip := c.eval(t, `(function () {
		var cv = document.getElementById("tl"), g = cv.getContext("2d"), W = cv.width, H = cv.height;
		function ink(a, b) {
			var x0 = Math.round(a / 1.1 * W), x1 = Math.round(b / 1.1 * W), px = g.getImageData(x0, 154, x1 - x0, 64).data, n = 0;
			for (var k = 0; k < px.length; k += 4) if (px[k + 3] > 128 && px[k] < 200) n++;
			return n;
		}
		return H + " " + ink(0.32, 0.48) + " " + ink(0.62, 0.78);
	})()`)
	var sh, under3, under6 int
	if _, err := fmt.Sscanf(strings.Trim(strip, `"`), "%d %d %d", &sh, &under3, &under6); err != nil || sh != 250 || under3 < 100 || under6 != 0 {
		t.Errorf("the timeline's waveform strip (canvas height, ink under window 3, under window 6): %s; want 250, the wave under 3 and nothing under 6", strip)
	}
	rows := c.eval(t, `Array.prototype.map.call(document.querySelectorAll("#events tbody tr"), function (r) { return r.className + ":" + r.cells[1].textContent + ":" + r.cells[8].textContent; }).join("|")`)
	if rows != `":normal:|ood:sag:2 of 7"` {
		t.Errorf("the event table's rows %s; want the normal event, and the sag event marked with 2 of its 7 windows", rows)
	}
	// One colour a class: the legend's sag is the PNG figures' colour of
	// class 1 of the run's list.
	sc := figure.ClassColour(1)
	if got, want := c.eval(t, `Array.prototype.filter.call(document.querySelectorAll("#tl-legend span"), function (s) { return s.textContent === "sag"; })[0].firstChild.style.background`),
		fmt.Sprintf(`"rgb(%d, %d, %d)"`, sc.R, sc.G, sc.B); got != want {
		t.Errorf("the legend's sag is %s, want the figures' %s", got, want)
	}
	if got := c.eval(t, `document.querySelector("#panel h3").textContent`); got != `"Window 3 of recording recording"` {
		t.Errorf("the window's panel is titled %s", got)
	}
	if got := c.eval(t, `document.querySelector("#panel div.ood").textContent`); got != fmt.Sprintf("%q", e.OOD) {
		t.Errorf("the panel's badge %s; want %q", got, e.OOD)
	}
	if out := os.Getenv("UAXAI_SCREENSHOT_ENGINEER"); out != "" {
		var shot struct{ Data string }
		c.call(t, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
		if raw, err := base64.StdEncoding.DecodeString(shot.Data); err == nil {
			_ = os.WriteFile(out, raw, 0o644)
		}
	}
	c.finish(t)
}
