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
