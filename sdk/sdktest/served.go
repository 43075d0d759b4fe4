package sdktest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ServedModel serves m by a model service of this process, as the host
// serves a draw to an out-of-process explainer, and returns the client
// side an explainer then gets: every call of it is a request to the
// service. stop closes the service, so that later calls fail as they do
// when the host is gone; the test's cleanup closes both.
func ServedModel(t testing.TB, m nn.Model) (served nn.Model, stop func()) {
	t.Helper()
	svc := driver.NewModelService()
	addr, h, err := svc.Add(m)
	if err != nil {
		svc.Close()
		t.Fatalf("sdktest: serve a model: %v", err)
	}
	dm, closeModel, err := sdk.DialModel(context.Background(), addr, h)
	if err != nil {
		svc.Close()
		t.Fatalf("sdktest: dial the served model: %v", err)
	}
	t.Cleanup(func() {
		closeModel()
		svc.Close()
	})
	return dm, func() { svc.Close() }
}

// BrokenModel is m with a Probs that always fails with the error "the
// network is broken": served (ServedModel), it is a model service whose
// computation fails, as a served network's may.
func BrokenModel(m nn.Model) nn.Model { return broken{m} }

type broken struct{ nn.Model }

func (broken) Probs(context.Context, []float32, []float32) error {
	return errors.New("the network is broken")
}

// ServiceFailure checks that an explainer's model-service failures are
// Explain's errors, never panics: with m served broken (BrokenModel), the
// error of Explain(req) contains prefix (the explainer, the input and
// the request, e.g. "explainer.lime: input 0: model service: Spans: "),
// "the network is broken" and "(Internal)"; with the service closed, it
// still contains prefix. newExplainer makes each explainer.
func ServiceFailure(t testing.TB, newExplainer func() sdk.Explainer, m nn.Model, req sdk.ExplainRequest, prefix string) {
	t.Helper()
	ctx := context.Background()
	dm, stop := ServedModel(t, BrokenModel(m))
	_, err := newExplainer().Explain(ctx, dm, req)
	for _, want := range []string{prefix, "the network is broken", "(Internal)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a broken served network: %v; want an error containing %q", err, want)
		}
	}
	stop()
	_, err = newExplainer().Explain(ctx, dm, req)
	if err == nil || !strings.Contains(err.Error(), prefix) {
		t.Errorf("the service closed: %v; want an error containing %q", err, prefix)
	}
}
