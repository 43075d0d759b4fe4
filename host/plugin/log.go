package plugin

import (
	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/internal/termsafe"
)

// clientLog is the logger a go-plugin client gets for one plugin. It
// passes everything to the Manager's logger but for what the host reports
// itself, which it turns into debug entries:
//
//   - the lines of a crashed plugin's panic or fatal error (go-plugin
//     logs every one as an error, hundreds of lines of goroutine dump):
//     the error of the call that failed quotes the first of them;
//   - "plugin process exited": a call that fails because of it says so,
//     with the plugin's stderr;
//   - "plugin failed to exit gracefully" for a plugin the host killed (on
//     a deadline, a signal, or Close).
//
// Every message and every string (or error, or Stringer) value it logs is
// escaped (termsafe.Escape): what a plugin logs, as hclog JSON or as raw
// stderr lines, reaches the terminal as one line that cannot move the
// cursor or pass for a line of the host's.
type clientLog struct {
	hclog.Logger
	p *proc
}

func (l clientLog) quiet(level hclog.Level, msg string, args []any) bool {
	switch {
	case level == hclog.Error && len(args) == 0:
		return true // a line of raw stderr in a panic
	case msg == "plugin process exited":
		return true // the call that meets it reports it, with the plugin's stderr
	case msg == "plugin failed to exit gracefully":
		l.p.mu.Lock()
		defer l.p.mu.Unlock()
		return l.p.killed
	}
	return false
}

func (l clientLog) Log(level hclog.Level, msg string, args ...any) {
	if level > hclog.Debug && l.quiet(level, msg, args) {
		level = hclog.Debug
	}
	l.Logger.Log(level, termsafe.Escape(msg), escapeArgs(args)...)
}

// escapeArgs returns a log entry's keys and values with the text of each
// escaped: strings, errors and Stringers become escaped strings; numbers
// and the like stay as they are.
func escapeArgs(args []any) []any {
	if len(args) == 0 {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = termsafe.Escape(v)
		case error:
			out[i] = termsafe.Escape(v.Error())
		case interface{ String() string }:
			out[i] = termsafe.Escape(v.String())
		default:
			out[i] = a
		}
	}
	return out
}

func (l clientLog) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l clientLog) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l clientLog) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }

func (l clientLog) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l clientLog) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }
func (l clientLog) With(args ...any) hclog.Logger {
	return clientLog{l.Logger.With(escapeArgs(args)...), l.p}
}
func (l clientLog) Named(name string) hclog.Logger {
	return clientLog{l.Logger.Named(name), l.p}
}
func (l clientLog) ResetNamed(name string) hclog.Logger {
	return clientLog{l.Logger.ResetNamed(name), l.p}
}
