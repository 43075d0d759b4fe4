package sdk

import (
	"reflect"
	"testing"
)

// TestCloneIsDeepAndNormalised: changing the clone leaves the original
// alone, and an array of tables becomes []any of map[string]any.
func TestCloneIsDeepAndNormalised(t *testing.T) {
	c := Config{"a": []any{int64(1), map[string]any{"b": 2.5}}, "t": []map[string]any{{"x": "y"}}}
	d := c.Clone()
	want := Config{"a": []any{int64(1), map[string]any{"b": 2.5}}, "t": []any{map[string]any{"x": "y"}}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("clone %#v, want %#v", d, want)
	}
	d["a"].([]any)[1].(map[string]any)["b"] = 9.0
	d["t"].([]any)[0].(map[string]any)["x"] = "z"
	if c["a"].([]any)[1].(map[string]any)["b"] != 2.5 || c["t"].([]map[string]any)[0]["x"] != "y" {
		t.Errorf("changing the clone changed the original: %#v", c)
	}
}
