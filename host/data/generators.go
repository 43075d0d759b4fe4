package data

import (
	"fmt"
	"strings"
)

// Generators returns the synthetic sources, in the order their names are
// listed to users: the one-phase PQD generator and the three-phase one.
// It returns a new slice on every call.
func Generators() []Generator { return []Generator{PQD{}, PQD3{}} }

// GeneratorByName returns the generator whose Name is name; its error lists
// the accepted names.
func GeneratorByName(name string) (Generator, error) {
	var names []string
	for _, g := range Generators() {
		if g.Name() == name {
			return g, nil
		}
		names = append(names, g.Name())
	}
	return nil, fmt.Errorf("data: unknown generator %q (accepted: %s)", name, strings.Join(names, ", "))
}
