package data

import (
	"fmt"
	"os"
	"strings"
)

// Check reports whether Open would accept spec, without reading the data:
// the spec parses and its folder exists. A grid checks its data with it
// before launching any run.
func Check(spec string) error {
	if kind, query, _ := strings.Cut(spec, "?"); kind == "synthetic" {
		_, _, err := openSynthetic(query) // reads nothing
		return err
	}
	sp, err := ParseSpec(spec)
	if err != nil {
		return err
	}
	st, err := os.Stat(sp.Dir)
	if err != nil {
		return fmt.Errorf("data: spec %q: %w", spec, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data: spec %q: %s is not a folder", spec, sp.Dir)
	}
	return nil
}
