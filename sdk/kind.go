package sdk

import (
	"fmt"
	"strings"
)

// ParseID splits a plugin ID "kind.name" into its kind and name. The kind
// must be posterior, explainer or summary; the name must be non-empty and
// made of lower-case letters, digits, '-' and '_', starting with a letter
// or digit.
func ParseID(id string) (Kind, string, error) {
	k, name, ok := strings.Cut(id, ".")
	if !ok {
		return "", "", fmt.Errorf("plugin ID %q is not of the form kind.name (e.g. explainer.occlusion)", id)
	}
	kind := Kind(k)
	switch kind {
	case KindPosterior, KindExplainer, KindSummary:
	default:
		return "", "", fmt.Errorf("plugin ID %q: unknown kind %q (accepted: posterior, explainer, summary)", id, k)
	}
	if name == "" {
		return "", "", fmt.Errorf("plugin ID %q: empty name", id)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '-' || r == '_')
		if !ok {
			return "", "", fmt.Errorf("plugin ID %q: name %q may only hold lower-case letters, digits, '-' and '_', starting with a letter or digit", id, name)
		}
	}
	return kind, name, nil
}

// Describe returns the kind of plugin p (which of Posterior, Explainer
// and Summary it implements) and its Info, after checking that the ID is
// namespaced by that kind and that Info sets only its kind's fields. It is
// the one place that reads a plugin's identity: Serve, the host's
// registry and sdktest all call it.
func Describe(p Plugin) (Kind, Info, error) {
	var kind Kind
	switch p.(type) {
	case Posterior:
		kind = KindPosterior
	case Explainer:
		kind = KindExplainer
	case Summary:
		kind = KindSummary
	default:
		return "", Info{}, fmt.Errorf("%T is not a plugin: it implements none of sdk.Posterior, sdk.Explainer, sdk.Summary", p)
	}
	info := p.Info()
	k, _, err := ParseID(info.ID)
	if err != nil {
		return "", Info{}, fmt.Errorf("%T: %w", p, err)
	}
	if k != kind {
		return "", Info{}, fmt.Errorf("%T is a plugin of kind %s but its ID %q is namespaced %s; use %s.<name>", p, kind, info.ID, k, kind)
	}
	if err := info.checkKind(kind); err != nil {
		return "", Info{}, fmt.Errorf("%s: %w", info.ID, err)
	}
	return kind, info, nil
}

// checkKind checks that only the fields of kind are set, and a summary's
// output kind.
func (i Info) checkKind(kind Kind) error {
	if i.Version == "" {
		return fmt.Errorf("Info.Version is empty (want the plugin's version, e.g. \"1.0.0\")")
	}
	var other []string
	if kind != KindPosterior && i.Finite {
		other = append(other, "Finite")
	}
	if kind != KindExplainer {
		if i.Needs != 0 {
			other = append(other, "Needs")
		}
		if i.Stochastic {
			other = append(other, "Stochastic")
		}
	}
	if kind != KindSummary {
		if i.Output != "" {
			other = append(other, "Output")
		}
		if i.MinDraws != 0 {
			other = append(other, "MinDraws")
		}
	}
	if len(other) > 0 {
		return fmt.Errorf("a %s sets Info.%s, which only another kind of plugin may set", kind, strings.Join(other, ", Info."))
	}
	if kind == KindSummary {
		switch i.Output {
		case OutputMap, OutputSet, OutputBand:
		default:
			return fmt.Errorf("Info.Output is %q (accepted: map, set, band)", i.Output)
		}
		if i.MinDraws < 0 {
			return fmt.Errorf("Info.MinDraws is %d (want >= 0)", i.MinDraws)
		}
	}
	return nil
}
