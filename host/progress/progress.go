package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar implements engine.Observer and reports training epochs.
type Bar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	stage    string
	total    int
	done     int
	msg      string
	start    time.Time
	last     time.Time
	interval time.Duration
	drawn    bool
}

// New writes to w; tty selects the redrawn bar.
func New(w io.Writer, tty bool) *Bar {
	return &Bar{w: w, tty: tty, interval: 5 * time.Second}
}

// Stderr is a Bar on standard error, redrawn when it is a terminal.
func Stderr() *Bar { return New(os.Stderr, IsTerminal(os.Stderr)) }

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Stage starts (or resizes) a stage.
func (b *Bar) Stage(name string, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if name == b.stage {
		b.total = total
		return
	}
	b.finishLocked()
	b.stage, b.total, b.done, b.msg = name, total, 0, ""
	b.start, b.last = time.Now(), time.Time{}
	if !b.tty {
		fmt.Fprintf(b.w, "%s ...\n", name)
	}
}

// Advance reports progress of the current stage.
func (b *Bar) Advance(done int, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if done > b.done {
		b.done = done
	}
	if msg != "" {
		b.msg = msg
	}
	now := time.Now()
	if b.tty {
		if now.Sub(b.last) < 100*time.Millisecond && b.done < b.total {
			return
		}
		b.last = now
		fmt.Fprintf(b.w, "\r\033[K%s", b.lineLocked(now))
		b.drawn = true
		return
	}
	if now.Sub(b.last) >= b.interval || (b.total > 0 && b.done == b.total) {
		b.last = now
		fmt.Fprintln(b.w, b.lineLocked(now))
	}
}

// Note prints a message on its own line.
func (b *Bar) Note(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
	fmt.Fprintln(b.w, msg)
	if b.drawn {
		fmt.Fprintf(b.w, "%s", b.lineLocked(time.Now()))
	}
}

// Finish ends the current stage's bar.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finishLocked()
}

func (b *Bar) finishLocked() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}

func (b *Bar) lineLocked(now time.Time) string {
	el := now.Sub(b.start).Round(time.Second)
	if b.total <= 0 {
		return fmt.Sprintf("%s  %s  %s", b.stage, el, b.msg)
	}
	frac := min(max(float64(b.done)/float64(b.total), 0), 1) // a plugin's report may be off
	const width = 24
	fill := int(frac * width)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	eta := ""
	if b.done > 0 && b.done < b.total {
		rem := time.Duration(float64(now.Sub(b.start)) * (1 - frac) / frac).Round(time.Second)
		eta = fmt.Sprintf(" eta %s", rem)
	}
	s := fmt.Sprintf("%s [%s] %d/%d %s%s", b.stage, bar, b.done, b.total, el, eta)
	if b.msg != "" {
		s += "  " + b.msg
	}
	return s
}
