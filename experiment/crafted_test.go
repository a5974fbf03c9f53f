package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
)

// The audit's 35 KB grid that expands to 9 million runs: refused from the
// counts, before any run is made, with the numbers in the message.
func TestLoadRefusesHugeGrid(t *testing.T) {
	var b strings.Builder
	b.WriteString("labels: fashion-mnist\nmodels: [cnn, mlp, resnet18]\nfractions: [0.05, 0.1, 0.2, 1]\n")
	b.WriteString("seeds: [")
	for i := range 50 {
		fmt.Fprintf(&b, "%d,", i)
	}
	b.WriteString("50]\nstrategies:\n  - name: lcl\n    params:\n")
	for _, k := range []string{"epsilon", "a", "b"} {
		fmt.Fprintf(&b, "      %s: [", k)
		for i := range 100 {
			fmt.Fprintf(&b, "%d,", i)
		}
		b.WriteString("100]\n")
	}
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	boundedtest.MaxAlloc(t, 16<<20, "loading a grid of 630 million runs", func() { _, err = Load(path) })
	want := path + ": the grid expands to 630544212 runs (3 models × 4 fractions × 51 seeds × 1030301 strategy settings); the limit is 100000 runs: split it into several grids"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	g := &Grid{Models: []string{"a"}, Fractions: []float64{1}, Seeds: []int{1}}
	for range 4 {
		g.Strategies = append(g.Strategies, Strategy{Params: map[string][]string{"a": make([]string, 1<<16), "b": make([]string, 1<<16), "c": make([]string, 1<<16), "d": make([]string, 1<<16)}})
	}
	if _, ok := g.Size(); ok {
		t.Error("Size of 4·2^64 strategy settings did not report the overflow")
	}
	if err := g.checkSize(); err == nil || !strings.Contains(err.Error(), "too many strategy settings") {
		t.Errorf("checkSize: %v", err)
	}
}

// FuzzParseGrid: no grid file panics Parse, and an accepted one expands to
// the size it reports, within the limit.
func FuzzParseGrid(f *testing.F) {
	for _, p := range []string{"../experiments/demo.yaml"} {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(raw)
		}
	}
	f.Add([]byte("labels: x\nmodels: [cnn]\nfractions: [1]\nseeds: [1]\nstrategies: [{name: lcl, sources: [a, b], params: {epsilon: [0.9, 0.99]}}]\n"))
	f.Add([]byte("labels: x\nmodels: [cnn]\nfractions: [2]\n"))
	f.Add([]byte("a: &a [1,2]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := Parse(raw)
		if err != nil {
			return
		}
		n, ok := g.Size()
		if !ok || n > MaxRuns {
			t.Fatalf("accepted a grid of %d runs (ok=%v)", n, ok)
		}
		if runs := g.Expand(); len(runs) != n {
			t.Fatalf("Expand gave %d runs, Size %d", len(runs), n)
		}
	})
}
