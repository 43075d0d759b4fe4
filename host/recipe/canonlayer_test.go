package recipe

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/sdk/nn"
)

// TestCanonLayerEveryField: a layer with every field set writes every
// toml key of nn.Layer, and its table decodes back to the same layer; a
// layer of zero fields but its kind writes the kind alone. Fields are
// found by reflection, so a field added to nn.Layer is covered.
func TestCanonLayerEveryField(t *testing.T) {
	var l nn.Layer
	v := reflect.ValueOf(&l).Elem()
	keys := 0
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("v" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 2))
		case reflect.Float32, reflect.Float64:
			f.SetFloat(0.25 * float64(i+1))
		default:
			t.Fatalf("nn.Layer field %s of kind %s: extend this test and canonLayer's conversions", v.Type().Field(i).Name, f.Kind())
		}
		if tag := v.Type().Field(i).Tag.Get("toml"); tag != "" && tag != "-" {
			keys++
		}
	}
	tab := canonLayer(l)
	if len(tab) != keys {
		t.Errorf("canonical table %v has %d keys, nn.Layer has %d toml fields", tab, len(tab), keys)
	}
	text, err := toml.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	var back nn.Layer
	if _, err := toml.Decode(string(text), &back); err != nil {
		t.Fatalf("decoding %s: %v", text, err)
	}
	if !reflect.DeepEqual(back, l) {
		t.Errorf("round trip of\n%s\ngave %+v, want %+v", text, back, l)
	}
	if tab := canonLayer(nn.Layer{Kind: nn.KindReLU}); !reflect.DeepEqual(tab, map[string]any{"kind": "relu"}) {
		t.Errorf("a ReLU's table is %v, want the kind alone", tab)
	}
}
