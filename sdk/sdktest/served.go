package sdktest

import (
	"context"
	"errors"
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
