package driver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/uaxai/uaxai/sdk/internal/wire"
)

// The hostile requests of issue 20, sent as raw wire bytes (so that the
// client builds nothing the way a well-behaved one would), by a client in
// a process of its own: what the test process allocates is the service's.

// rawClientCodec sends a rawRequest's bytes as the message and drops the
// answer.
type rawClientCodec struct{}

func (rawClientCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*rawRequest))}, nil
}
func (rawClientCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (rawClientCodec) Name() string                         { return "proto" }

// hostileRequest is the wire form of an attack on a served model of n
// values an input, with handle h: its method and bytes.
func hostileRequest(mode string, h uint64, n int) (string, []byte) {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, h)
	one := wire.Float32Bytes(make([]float32, n))
	packed := func(b []byte, num protowire.Number, size int) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, bytes.Repeat([]byte{1}, size))
	}
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	switch mode {
	case "starts": // 20 MiB of packed window starts: 20 M int64s decoded
		b = field(b, 2, one)
		b = packed(b, 3, 1)
		return "Windows", packed(b, 4, 20<<20)
	case "targets": // 20 MiB of packed targets
		b = field(b, 2, one)
		return "InputGrad", packed(b, 3, 20<<20)
	case "layer": // a 20 MiB layer name
		return "Layer", field(b, 2, bytes.Repeat([]byte{'c'}, 20<<20))
	case "huge": // a 64 MiB message
		return "Probs", field(b, 2, make([]byte, 64<<20))
	case "largest": // the largest Probs a request may carry
		return "Probs", field(b, 2, make([]byte, 4*MaxServiceBatch(n)*n))
	}
	panic("unknown mode " + mode)
}

// TestHostileServiceClient is the hostile client's process: it runs only
// when runHostile starts it, sends UAXAI_HOSTILE_CALLS copies of the
// mode's request at once and prints each call's status.
func TestHostileServiceClient(t *testing.T) {
	addr := os.Getenv("UAXAI_HOSTILE_ADDR")
	if addr == "" {
		t.Skip("the hostile client of TestModelServiceBoundsMemory")
	}
	h, _ := strconv.ParseUint(os.Getenv("UAXAI_HOSTILE_HANDLE"), 10, 64)
	n, _ := strconv.Atoi(os.Getenv("UAXAI_HOSTILE_N"))
	calls, _ := strconv.Atoi(os.Getenv("UAXAI_HOSTILE_CALLS"))
	method, req := hostileRequest(os.Getenv("UAXAI_HOSTILE_MODE"), h, n)
	cc, err := grpc.NewClient("unix:"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30), grpc.ForceCodecV2(rawClientCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rawRequest(req)
			var resp rawRequest
			err := cc.Invoke(context.Background(), "/uaxai.v2.Model/"+method, &r, &resp)
			st := status.Convert(err)
			mu.Lock()
			fmt.Printf("STATUS %s %s\n", st.Code(), strings.ReplaceAll(st.Message(), "\n", " "))
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// runHostile serves m's model in svc, runs the hostile client against it
// and returns the statuses it printed and the most heap the test process
// held meanwhile beyond what it held before.
func runHostile(t *testing.T, svc *ModelService, mode string, calls int) (statuses []string, peak uint64) {
	t.Helper()
	_, m := convModel(t, 1)
	addr, h, err := svc.Add(m)
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap close to what is live
	runtime.GC()
	resetPeakRSS()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var most atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > most.Load() {
				most.Store(ms.HeapInuse)
			}
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileServiceClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), "UAXAI_HOSTILE_ADDR="+addr, "UAXAI_HOSTILE_HANDLE="+strconv.FormatUint(h, 10),
		"UAXAI_HOSTILE_N="+strconv.Itoa(m.InputLen()), "UAXAI_HOSTILE_MODE="+mode, "UAXAI_HOSTILE_CALLS="+strconv.Itoa(calls))
	out, err := cmd.CombinedOutput()
	close(stop)
	<-sampled
	if err != nil {
		t.Fatalf("the hostile client: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "STATUS "); ok {
			statuses = append(statuses, s)
		}
	}
	if len(statuses) != calls {
		t.Fatalf("the hostile client printed %d statuses, want %d:\n%s", len(statuses), calls, out)
	}
	if p := most.Load(); p > base.HeapInuse {
		peak = p - base.HeapInuse
	}
	if rss := peakRSS(); rss > 0 {
		t.Logf("%s: the test process's peak resident set was %.1f MiB", mode, float64(rss)/(1<<20))
	}
	return statuses, peak
}

// resetPeakRSS starts a new peak of the process's resident set (Linux's
// clear_refs 5), and peakRSS reads it (VmHWM), or 0 where neither works.
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestModelServiceBoundsMemory: a plugin's oversized fields are refused
// from their wire bytes, before they are decoded (old: 20 MiB of packed
// starts became 160 MiB of int64s, then 160 MiB of ints, before any
// check: 200 MiB of heap); a message past MaxServiceMessage is refused
// from its header (old: 193 MiB); and 16 of the largest legal requests
// at once hold the memory of the two that may be admitted, not of
// sixteen.
func TestModelServiceBoundsMemory(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		mode  string
		calls int
		want  string
		most  uint64 // the heap the service may take
	}{
		{"starts", 1, "InvalidArgument Windows: starts has 20971520 values; at most 1048576 are accepted in one request", 64 * MiB},
		{"targets", 1, "InvalidArgument InputGrad: targets has 20971520 values; at most 65536", 64 * MiB},
		{"layer", 1, "InvalidArgument Layer: layer has 20971520 bytes; at most 256", 64 * MiB},
		{"huge", 1, "ResourceExhausted grpc: received message larger than max (", 8 * MiB},
		// Two admitted at a time, each of 8 MiB on the wire: the bytes
		// received, materialized, decoded and converted, and the
		// answers; the ten waiting hold their windows only.
		{"largest", 16, "OK ", 96 * MiB},
	} {
		t.Run(c.mode, func(t *testing.T) {
			svc := newModelService(2)
			t.Cleanup(func() { svc.Close() })
			statuses, peak := runHostile(t, svc, c.mode, c.calls)
			for _, s := range statuses {
				if !strings.HasPrefix(s, c.want) {
					t.Errorf("status %q; want %q", s, c.want)
				}
				// gRPC names the message's size and the bound.
				var size, bound int
				if _, err := fmt.Sscanf(strings.TrimPrefix(s, c.want), "%d vs. %d)", &size, &bound); c.mode == "huge" && (err != nil || size <= 64<<20 || bound != MaxServiceMessage) {
					t.Errorf("status %q: want a size past 64 MiB and the bound %d", s, MaxServiceMessage)
				}
			}
			t.Logf("%s: %d calls, the service's heap grew by at most %.1f MiB", c.mode, c.calls, float64(peak)/MiB)
			if peak > c.most {
				t.Errorf("%d calls of %s: the heap grew by %.1f MiB; the bound is %d MiB", c.calls, c.mode, float64(peak)/MiB, c.most/MiB)
			}
		})
	}
}

// countingConn counts the bytes a client wrote.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// TestModelServiceAdmitsBeforeReceiving: while a request holds the only
// turn, the requests waiting for it are not read: the client gets to
// write one whole request and a flow-control window of each other (old:
// all six whole, 50 MiB, decoded and held while they waited).
func TestModelServiceAdmitsBeforeReceiving(t *testing.T) {
	_, m := convModel(t, 1)
	sm := &slow{Model: m, release: make(chan struct{})}
	svc := newModelService(1)
	t.Cleanup(func() { svc.Close() })
	addr, h, err := svc.Add(sm)
	if err != nil {
		t.Fatal(err)
	}
	var written atomic.Int64
	cc, err := grpc.NewClient("unix:"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30), grpc.ForceCodecV2(rawClientCodec{})),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", strings.TrimPrefix(a, "unix:"))
			if err != nil {
				return nil, err
			}
			return countingConn{c, &written}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, req := hostileRequest("largest", h, m.InputLen())
	size := int64(len(req))
	const calls = 6
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, resp := rawRequest(req), rawRequest(nil)
			if err := cc.Invoke(context.Background(), "/uaxai.v2.Model/Probs", &r, &resp); err != nil {
				t.Error(err)
			}
		}()
	}
	for sm.now.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	// Let the client write all it can.
	for last := int64(-1); last != written.Load(); time.Sleep(200 * time.Millisecond) {
		last = written.Load()
	}
	got := written.Load()
	most := size + (calls-1)*(serviceWindow+64<<10) + 1<<20
	t.Logf("while one request computes, the client wrote %.1f MiB of six requests of %.1f MiB", float64(got)/(1<<20), float64(size)/(1<<20))
	if got > most {
		t.Errorf("the client wrote %d bytes while one request of %d held the turn; at most %d (one request and a window of each other)", got, size, most)
	}
	close(sm.release)
	wg.Wait()
	if w := written.Load(); w < calls*size {
		t.Errorf("the client wrote %d bytes of %d requests of %d", w, calls, size)
	}
}

// TestModelServiceLimitsConnections: past MaxServiceConnections a
// connection is closed at once; when one closes, a new one is served.
func TestModelServiceLimitsConnections(t *testing.T) {
	_, m := convModel(t, 1)
	svc := newModelService(1)
	t.Cleanup(func() { svc.Close() })
	addr, _, err := svc.Add(m)
	if err != nil {
		t.Fatal(err)
	}
	// served reports whether the server speaks on a new connection (an
	// HTTP/2 server sends its SETTINGS first) or closes it (a closed one
	// answers at once; a served one within the minute, however loaded
	// the machine).
	served := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := c.Read(make([]byte, 9))
		return err == nil
	}
	dial := func() net.Conn {
		c, err := net.Dial("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	conns := make([]net.Conn, MaxServiceConnections)
	for i := range conns {
		if conns[i] = dial(); !served(conns[i]) {
			t.Fatalf("connection %d of %d was not served", i+1, MaxServiceConnections)
		}
	}
	extra := dial()
	if _, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection %d: read %v; want EOF, the service closing it", MaxServiceConnections+1, err)
	}
	conns[0].Close()
	deadline := time.Now().Add(time.Minute)
	for !served(dial()) {
		if time.Now().After(deadline) {
			t.Fatal("after a connection closed, a new one is still refused")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModelServiceRemovesStaleDirs: the socket directories of hosts that
// are gone are removed when a service starts; a live process's stays.
func TestModelServiceRemovesStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true(1) to take a dead process's ID from:", err)
	}
	dead := filepath.Join(tmp, fmt.Sprintf("uaxai-models-%d-123", gone.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("uaxai-models-%d-456", os.Getppid()))
	other := filepath.Join(tmp, "uaxai-models-x-789")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_, m := convModel(t, 1)
	svc := NewModelService()
	if _, _, err := svc.Add(m); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{dead: false, live: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	svc.Close()
	left, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("uaxai-models-%d-*", os.Getpid())))
	if len(left) != 0 {
		t.Errorf("Close left %v", left)
	}
}

// TestModelServiceLongTMPDIR: a temporary directory too long for a unix
// socket's path is named as the cause, with what to do.
func TestModelServiceLongTMPDIR(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	_, m := convModel(t, 1)
	svc := NewModelService()
	defer svc.Close()
	_, _, err := svc.Add(m)
	if err == nil || !strings.Contains(err.Error(), "unix socket paths must fit in 107: set TMPDIR to a shorter directory") ||
		!strings.Contains(err.Error(), long) {
		t.Fatalf("a long TMPDIR: %v", err)
	}
}
