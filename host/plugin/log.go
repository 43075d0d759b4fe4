package plugin

import (
	"github.com/hashicorp/go-hclog"
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
	l.Logger.Log(level, msg, args...)
}

func (l clientLog) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l clientLog) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }
func (l clientLog) With(args ...any) hclog.Logger { return clientLog{l.Logger.With(args...), l.p} }
func (l clientLog) Named(name string) hclog.Logger {
	return clientLog{l.Logger.Named(name), l.p}
}
func (l clientLog) ResetNamed(name string) hclog.Logger {
	return clientLog{l.Logger.ResetNamed(name), l.p}
}
