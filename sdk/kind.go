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

// KindOf returns the kind of plugin p is: which of Posterior, Explainer
// and Summary it implements.
func KindOf(p any) (Kind, error) {
	switch p.(type) {
	case Posterior:
		return KindPosterior, nil
	case Explainer:
		return KindExplainer, nil
	case Summary:
		return KindSummary, nil
	}
	return "", fmt.Errorf("%T is not a plugin: it implements none of sdk.Posterior, sdk.Explainer, sdk.Summary", p)
}

// infoOf returns the common Info of a plugin of any kind.
func infoOf(p any) (Info, error) {
	switch v := p.(type) {
	case Posterior:
		return v.Info().Info, nil
	case Explainer:
		return v.Info().Info, nil
	case Summary:
		return v.Info().Info, nil
	}
	_, err := KindOf(p)
	return Info{}, err
}

// checkInfo checks that a plugin's ID is namespaced by its kind.
func checkInfo(p any) (Kind, Info, error) {
	kind, err := KindOf(p)
	if err != nil {
		return "", Info{}, err
	}
	info, _ := infoOf(p)
	k, _, err := ParseID(info.ID)
	if err != nil {
		return "", Info{}, fmt.Errorf("%T: %w", p, err)
	}
	if k != kind {
		return "", Info{}, fmt.Errorf("%T is a plugin of kind %s but its ID %q is namespaced %s; use %s.<name>", p, kind, info.ID, k, kind)
	}
	return kind, info, nil
}
