package cli

import (
	"path/filepath"
	"testing"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/models"
)

// The shipped grid files name presets, models and label sets that lcl train
// knows: a typo there would only surface hours into a user's grid. Each
// name is checked once, for the first file that names it: the grids'
// expansions repeat a few names over hundreds of runs, and loading a label
// set (ImageNet's) or building a model's spec once per run was most of the
// test's time.
func TestShippedGridsNameKnownPresetsModelsAndLabelSets(t *testing.T) {
	files, err := filepath.Glob("../../../../experiments/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no grid files found: %v", err)
	}
	reg := models.Builtin()
	seen := map[string]bool{} // "preset NAME", "model NAME", "labels NAME"
	first := func(kind, name string) bool {
		k := kind + " " + name
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	for _, file := range files {
		g, err := experiment.Load(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, r := range g.Expand() {
			c := r.Config
			if c.Preset != "" && first("preset", c.Preset) {
				if _, err := trainer.PresetByName(c.Preset); err != nil {
					t.Errorf("%s: preset %q: %v", file, c.Preset, err)
				}
			}
			if first("model", c.Model) {
				if _, err := reg.Get(c.Model, models.Input{C: 3, H: 224, W: 224, NumClasses: 10}); err != nil {
					t.Errorf("%s: model %q: %v", file, c.Model, err)
				}
			}
			if first("labels", c.Labels) {
				if _, err := labels.Builtin(c.Labels); err != nil {
					t.Errorf("%s: label set %q: %v", file, c.Labels, err)
				}
			}
		}
	}
	if len(seen) < 3 {
		t.Fatalf("the grids named %d presets, models and label sets: %v", len(seen), seen)
	}
}
