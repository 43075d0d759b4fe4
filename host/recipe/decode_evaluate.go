package recipe

import (
	"strconv"

	"github.com/uaxai/uaxai/sdk"
)

func defaultEvaluate() Evaluate {
	return Evaluate{Mask: MaskAmplitude, Eps: 0.001, Groups: []string{GroupAll, GroupDisc7}, Abs: true}
}

func (d *decoder) evaluate(v any, e *Evaluate) error {
	path := []string{"evaluate"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return err
	}
	err = d.table(tbl, path, []field{
		{"mask", d.setString(&e.Mask)},
		{"eps", d.setFloat(&e.Eps)},
		{"groups", d.setStrings(&e.Groups)},
		{"abs", d.setBool(&e.Abs)},
	})
	if err != nil {
		return err
	}
	if e.Mask != MaskAmplitude && e.Mask != MaskEvent {
		return d.keyErr(sub(path, "mask"), "unknown mask kind %s (accepted: %s, %s)", sdk.Quote(e.Mask), MaskAmplitude, MaskEvent)
	}
	if !(e.Eps > 0) {
		return d.keyErr(sub(path, "eps"), "%v must be > 0", e.Eps)
	}
	if len(e.Groups) == 0 {
		return d.keyErr(sub(path, "groups"), "is empty (accepted: %s, %s)", GroupAll, GroupDisc7)
	}
	seen := map[string]bool{}
	for i, g := range e.Groups {
		gp := sub(path, "groups", strconv.Itoa(i))
		if g != GroupAll && g != GroupDisc7 {
			return d.keyErr(gp, "unknown group %s (accepted: %s, %s)", sdk.Quote(g), GroupAll, GroupDisc7)
		}
		if seen[g] {
			return d.keyErr(gp, "group %s is listed twice", sdk.Quote(g))
		}
		seen[g] = true
	}
	return nil
}
