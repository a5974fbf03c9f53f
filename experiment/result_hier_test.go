package experiment

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

// TestReadResultHierarchical: a result.json's hierarchical metrics (one
// per model, like top1) reach the stored run; a list of another length
// than top1's is refused with the field named.
func TestReadResultHierarchical(t *testing.T) {
	c := simstore.RunConfig{Labels: "cifar100", Model: "cnn", Fraction: 1, Strategy: "sl", Seed: 1}
	for _, tc := range []struct {
		name, json string
		want       map[string][]float64
		err        string
	}{
		{"two peers", `{"top1": [0.5, 0.6], "mistake_severity": [2.5, 2.4], "hdist1": [1.2, 1.0], "hdist5": [2, 1.9], "hdist20": [2.6, 2.5]}`,
			map[string][]float64{"mistake_severity": {2.5, 2.4}, "hdist1": {1.2, 1.0}, "hdist5": {2, 1.9}, "hdist20": {2.6, 2.5}}, ""},
		{"none", `{"top1": 0.5}`, nil, ""},
		{"short", `{"top1": [0.5, 0.6], "hdist5": [2]}`, nil, "1 hdist5 values for 2 top1 values"},
		// The mistakes by height of two peers become one count per model
		// and height, up to the greatest height either has.
		{"by height", `{"top1": [0.5, 0.6], "mistake_severity": [2, 1.5], "mistakes": [4, 2], "mistakes_by_height": [[0, 1, 2, 1], [0, 1, 1]]}`,
			map[string][]float64{"mistake_severity": {2, 1.5}, "mistakes": {4, 2}, "mistakes_h0": {0, 0}, "mistakes_h1": {1, 1},
				"mistakes_h2": {2, 1}, "mistakes_h3": {1, 0}}, ""},
		{"no mistakes", `{"top1": [1], "mistakes": [0], "mistakes_by_height": [[]]}`, map[string][]float64{"mistakes": {0}}, ""},
		{"counts that do not add up", `{"top1": [0.5], "mistakes": [3], "mistakes_by_height": [[0, 1, 1]]}`, nil,
			"mistakes_by_height[0] sums to 2, mistakes[0] is 3"},
		{"not a count", `{"top1": [0.5], "mistakes": [1.5], "mistakes_by_height": [[0, 1.5]]}`, nil, "mistakes_by_height[0][1] = 1.5: want a count"},
		{"a peer short", `{"top1": [0.5, 0.6], "mistakes": [1, 1], "mistakes_by_height": [[0, 1]]}`, nil,
			"2 mistakes and 1 mistakes_by_height values for 2 top1 values"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ResultFile), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := ReadResult(c, dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(run.Hier, tc.want) {
			t.Errorf("%s: Hier %v, want %v", tc.name, run.Hier, tc.want)
		}
	}
}

// ParseHierHeight reads back exactly the names HierHeight makes.
func TestHierHeightNames(t *testing.T) {
	for h := range 40 {
		if got, ok := ParseHierHeight(HierHeight(h)); !ok || got != h {
			t.Errorf("ParseHierHeight(%q) = %d, %v", HierHeight(h), got, ok)
		}
	}
	for _, name := range []string{"mistakes", "mistakes_h", "mistakes_h-1", "mistakes_h01", "mistakes_hx", "hdist5"} {
		if h, ok := ParseHierHeight(name); ok {
			t.Errorf("ParseHierHeight(%q) = %d, a height", name, h)
		}
	}
}
