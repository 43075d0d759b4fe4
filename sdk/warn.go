package sdk

import (
	"context"
	"fmt"
	"os"
)

// warnKey is the context key of WithWarn's function.
type warnKey struct{}

// WithWarn returns a context that carries warn: Warn calls it. The host
// gives its commands one that prints each distinct warning once.
func WithWarn(ctx context.Context, warn func(msg string)) context.Context {
	return context.WithValue(ctx, warnKey{}, warn)
}

// Warn reports something a plugin assumed or doubts that the user should
// know (a guess it made where the input was ambiguous): through the
// function ctx carries (WithWarn), or else to standard error. It does not
// stop the work; what cannot be done is an error.
func Warn(ctx context.Context, msg string) {
	if w, ok := ctx.Value(warnKey{}).(func(string)); ok && w != nil {
		w(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "warning: %s\n", msg)
}
