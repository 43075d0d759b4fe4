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
// and Summary it implements) and its Info, after checking the Info
// (Info.Validate). It is the one place that reads a plugin's identity:
// Serve, the host's registry and sdktest all call it. A value that
// implements two kinds is refused: the host could not tell which it is.
func Describe(p Plugin) (Kind, Info, error) {
	var kinds []Kind
	if _, ok := p.(Posterior); ok {
		kinds = append(kinds, KindPosterior)
	}
	if _, ok := p.(Explainer); ok {
		kinds = append(kinds, KindExplainer)
	}
	if _, ok := p.(Summary); ok {
		kinds = append(kinds, KindSummary)
	}
	switch len(kinds) {
	case 0:
		return "", Info{}, fmt.Errorf("%T is not a plugin: it implements none of sdk.Posterior, sdk.Explainer, sdk.Summary", p)
	case 1:
	default:
		return "", Info{}, fmt.Errorf("%T implements %d plugin kinds %v; a plugin is exactly one of sdk.Posterior, sdk.Explainer, sdk.Summary", p, len(kinds), kinds)
	}
	info := p.Info()
	if err := info.Validate(kinds[0]); err != nil {
		return "", Info{}, fmt.Errorf("%T: %w", p, err)
	}
	if _, ok := p.(DrawSampler); info.ServesModels && !ok {
		return "", Info{}, fmt.Errorf("%T: %s: Info.ServesModels is set but the posterior has no SampleDraws method (sdk.DrawSampler), which returns its served draws", p, info.ID)
	}
	return kinds[0], info, nil
}

// Validate checks that i describes a plugin of the given kind: the ID is
// "kind.name" (see ParseID), the version is set, only the fields of that
// kind are set, and a summary's output is map, set or band. The host
// applies it to the Info a plugin process reports, too.
func (i Info) Validate(kind Kind) error {
	k, _, err := ParseID(i.ID)
	if err != nil {
		return err
	}
	if k != kind {
		return fmt.Errorf("it is a plugin of kind %s but its ID %q is namespaced %s; use %s.<name>", kind, i.ID, k, kind)
	}
	if i.Version == "" {
		return fmt.Errorf("%s: Info.Version is empty (want the plugin's version, e.g. \"1.0.0\")", i.ID)
	}
	var other []string
	if kind != KindPosterior {
		if i.Finite {
			other = append(other, "Finite")
		}
		if i.Base != "" {
			other = append(other, "Base")
		}
		if len(i.BaseKeys) > 0 {
			other = append(other, "BaseKeys")
		}
		if len(i.Files) > 0 {
			other = append(other, "Files")
		}
		if i.Replicates {
			other = append(other, "Replicates")
		}
		if i.ServesModels {
			other = append(other, "ServesModels")
		}
	}
	if kind != KindExplainer {
		if i.Needs != 0 {
			other = append(other, "Needs")
		}
		if i.Stochastic {
			other = append(other, "Stochastic")
		}
		if i.WantsModel {
			other = append(other, "WantsModel")
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
		return fmt.Errorf("%s: the %s sets Info.%s, which only another kind of plugin may set", i.ID, kind, strings.Join(other, ", Info."))
	}
	if kind == KindPosterior {
		if err := i.validateBase(); err != nil {
			return err
		}
	}
	if kind == KindSummary {
		switch i.Output {
		case OutputMap, OutputSet, OutputBand:
		default:
			return fmt.Errorf("%s: Info.Output is %q (accepted: map, set, band)", i.ID, i.Output)
		}
		if i.MinDraws < 0 {
			return fmt.Errorf("%s: Info.MinDraws is %d (want >= 0)", i.ID, i.MinDraws)
		}
	}
	return nil
}

// validateBase checks a posterior's Base, BaseKeys and Files.
func (i Info) validateBase() error {
	if i.Base != "" {
		k, _, err := ParseID(i.Base)
		if err != nil {
			return fmt.Errorf("%s: Info.Base: %w", i.ID, err)
		}
		if k != KindPosterior {
			return fmt.Errorf("%s: Info.Base is %q, a plugin of kind %s (accepted: a posterior ID, posterior.<name>)", i.ID, i.Base, k)
		}
		if i.Base == i.ID {
			return fmt.Errorf("%s: Info.Base names the posterior itself (accepted: another posterior)", i.ID)
		}
	} else if len(i.BaseKeys) > 0 {
		return fmt.Errorf("%s: Info.BaseKeys is set without Info.Base", i.ID)
	}
	for _, list := range []struct {
		name string
		keys []string
	}{{"BaseKeys", i.BaseKeys}, {"Files", i.Files}} {
		seen := map[string]bool{}
		for _, k := range list.keys {
			if k == "" || seen[k] {
				return fmt.Errorf("%s: Info.%s has an empty or repeated key %q (accepted: distinct table keys)", i.ID, list.name, k)
			}
			seen[k] = true
		}
	}
	return nil
}
