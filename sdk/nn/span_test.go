package nn

import (
	"math"
	"testing"
)

// TestExpNonPos: expNonPos against math.Exp on a grid of x <= 0, to the
// relative error its doc comment promises, and its special values.
func TestExpNonPos(t *testing.T) {
	for i := 0; i <= 200000; i++ {
		x := -float64(i) * 3.5e-3 // down to -700
		got, want := expNonPos(x), math.Exp(x)
		if math.Abs(got-want) > 1e-9*want {
			t.Fatalf("expNonPos(%g) = %g, math.Exp %g", x, got, want)
		}
	}
	if expNonPos(0) != 1 || expNonPos(-709) != 0 || expNonPos(math.Inf(-1)) != 0 || !math.IsNaN(expNonPos(math.NaN())) {
		t.Error("special values")
	}
}
