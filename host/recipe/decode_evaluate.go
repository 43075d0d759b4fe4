package recipe

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/metric"
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
	var metrics []string
	var configs map[string]any
	err = d.table(tbl, path, []field{
		{"mask", d.setString(&e.Mask)},
		{"eps", d.setFloat(&e.Eps)},
		{"groups", d.setStrings(&e.Groups)},
		{"abs", d.setBool(&e.Abs)},
		{"metrics", d.setStrings(&metrics)},
		{"randomise_draws", d.setBool(&e.RandomiseDraws)},
		{"metric", func(v any, p []string) error {
			var err error
			configs, err = d.asTable(v, p)
			return err
		}},
	})
	if err != nil {
		return err
	}
	if e.Metrics, err = d.metrics(path, metrics, configs); err != nil {
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

// metrics builds [evaluate] metrics: each name (with or without
// "metric.") a registered metric, listed once, configured by its
// [evaluate.metric.<name>] table, which the registry checks here so that
// a bad key is an error at its line; a table of a metric not listed is an
// error too.
func (d *decoder) metrics(path []string, names []string, configs map[string]any) ([]MetricRef, error) {
	reg := metric.Builtin()
	var out []MetricRef
	for i, name := range names {
		ip := sub(path, "metrics", strconv.Itoa(i))
		id := metric.FullID(name)
		if _, ok := reg.Lookup(id); !ok {
			var known []string
			for _, k := range reg.IDs() {
				known = append(known, strings.TrimPrefix(k, "metric."))
			}
			hint := ""
			if c := closest(strings.TrimPrefix(id, "metric."), known); c != "" {
				hint = "; did you mean " + sdk.Quote(c) + "?"
			}
			return nil, d.keyErr(ip, "unknown metric %s (accepted: %s)%s", sdk.Quote(name), strings.Join(known, ", "), hint)
		}
		if slices.ContainsFunc(out, func(m MetricRef) bool { return m.ID == id }) {
			return nil, d.keyErr(ip, "metric %s is listed twice", sdk.Quote(name))
		}
		ref := MetricRef{ID: id, Config: sdk.Config{}, Line: d.line(ip)}
		short := strings.TrimPrefix(id, "metric.")
		for _, key := range []string{short, id} {
			v, ok := configs[key]
			if !ok {
				continue
			}
			tp := sub(path, "metric", key)
			t, err := d.asTable(v, tp)
			if err != nil {
				return nil, err
			}
			for k, x := range t {
				ref.Config[k] = sdk.CloneValue(x)
			}
		}
		if _, err := reg.New(id, ref.Config); err != nil {
			return nil, d.errAt(sub(path, "metric", short), "[evaluate.metric.%s]: %v", short, err)
		}
		out = append(out, ref)
	}
	var extra []string
	for key := range configs {
		if !slices.ContainsFunc(out, func(m MetricRef) bool { return key == m.ID || "metric."+key == m.ID }) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, d.errAt(sub(path, "metric", extra[0]), "[evaluate.metric.%s] configures a metric that [evaluate] metrics does not list (listed: %s)", extra[0], strings.Join(names, ", "))
	}
	return out, nil
}
