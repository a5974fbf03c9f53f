package experiment

import (
	"path/filepath"
	"testing"
)

// The grid files shipped in experiments/ parse, and their sizes are the
// ones their comments state.
func TestShippedGrids(t *testing.T) {
	want := map[string]int{
		"demo.yaml": 12, "demo-full.yaml": 64, "cifar100-wrn.yaml": 128,
		"awa2-resnet101.yaml": 176, "cub-resnet.yaml": 352, "nabirds-resnet.yaml": 256, "precision.yaml": 6,
		"cifar100-densenet.yaml": 128, "awa2-inception-resnet-v2.yaml": 176,
		"imagenet-resnext.yaml": 128, "imagenet-senet.yaml": 128, "tour.yaml": 2, "methods.yaml": 60,
		"quickdraw.yaml": 66, "quickdraw-demo.yaml": 24,
	}
	files, err := filepath.Glob("../experiments/*.yaml")
	if err != nil || len(files) != len(want) {
		t.Fatalf("grid files %v (%v), want %d", files, err, len(want))
	}
	ids := map[string]map[string]bool{}
	for _, f := range files {
		g, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		runs := g.Expand()
		if n := want[filepath.Base(f)]; len(runs) != n {
			t.Errorf("%s: %d runs, want %d", f, len(runs), n)
		}
		ids[filepath.Base(f)] = map[string]bool{}
		for _, r := range runs {
			ids[filepath.Base(f)][r.ID] = true
		}
	}
	// demo-full and methods contain the demo's runs, so `make demo-full` and
	// `make demo-methods` after `make demo` reuse them; the Quick, Draw! grid
	// contains its demo's (make demo-quickdraw-full after make demo-quickdraw).
	for grid, demo := range map[string]string{"demo-full.yaml": "demo.yaml", "methods.yaml": "demo.yaml",
		"quickdraw.yaml": "quickdraw-demo.yaml"} {
		for id := range ids[demo] {
			if !ids[grid][id] {
				t.Errorf("%s run %s is not in %s", demo, id, grid)
			}
		}
	}
}
