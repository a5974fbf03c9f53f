package similarity

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// TestHierarchyDistance: the LCA heights of a graph with two roots, a
// class that is an ancestor of another and leaves at different depths;
// a pair without a common ancestor costs the greatest height; the
// matrix is Distance and equals H·(1 − s) for the lca source's height form.
func TestHierarchyDistance(t *testing.T) {
	// r ─ x ─ a, y ─ b          (heights: a, b, c, d 0; y 1; x 2; r 3)
	//   └ c                     b's parent y is itself a class
	// s ─ d                     (s 1: another tree)
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "y"}},
		Hierarchy: []labels.Node{{ID: "r"}, {ID: "x", Parent: "r"}, {ID: "a", Parent: "x"}, {ID: "y", Parent: "x"},
			{ID: "b", Parent: "y"}, {ID: "c", Parent: "r"}, {ID: "s"}, {ID: "d", Parent: "s"}}}
	h, err := NewHierarchy(set, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Graph() != GraphHierarchy || h.Len() != 5 || h.MaxHeight() != 3 {
		t.Fatalf("graph %s, %d classes, max height %d; want hierarchy, 5, 3", h.Graph(), h.Len(), h.MaxHeight())
	}
	want := [5][5]float64{
		// a  b  c  d  y
		{0, 2, 3, 3, 2}, // a
		{2, 0, 3, 3, 1}, // b: y is its ancestor, height 1
		{3, 3, 0, 3, 3}, // c
		{3, 3, 3, 0, 3}, // d: no common ancestor with the others
		{2, 1, 3, 3, 0}, // y
	}
	m, err := h.Matrix(0)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := Compute(context.Background(), LCA{}, set, map[string]string{"form": FormHeight})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		for j := range 5 {
			if got := h.Distance(i, j); got != want[i][j] {
				t.Errorf("Distance(%s, %s) = %v, want %v", set.Classes[i].ID, set.Classes[j].ID, got, want[i][j])
			}
			if float64(m[i*5+j]) != want[i][j] {
				t.Errorf("Matrix[%d][%d] = %v, want %v", i, j, m[i*5+j], want[i][j])
			}
			if i != j {
				if s := float64(sim.Data[i*5+j]); math.Abs(3*(1-s)-want[i][j]) > 1e-6 {
					t.Errorf("height form s(%d,%d) = %v: H·(1−s) = %v, want the distance %v", i, j, s, 3*(1-s), want[i][j])
				}
			}
		}
	}
	if _, err := h.Matrix(10); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("a 5×5 matrix under a 10-byte limit: %v, want the memory refusal", err)
	}
}

// A training run's WordNet hierarchy is built from the classes' synsets and
// their ancestors alone (wordnet.OpenAncestors): the same heights as on the
// whole database, for CIFAR-100 and Fashion-MNIST.
func TestHierarchyOnAncestorsOnly(t *testing.T) {
	full, err := wordnet.Open("")
	if err != nil {
		t.Fatalf("WordNet 3.0 is required for this test (run `make deps`): %v", err)
	}
	for _, name := range []string{"cifar100", "fashion-mnist"} {
		set, err := labels.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := NewHierarchy(set, "", func() (*wordnet.DB, error) { return full, nil })
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewHierarchy(set, "", func() (*wordnet.DB, error) { return wordnet.OpenAncestors("", set.WNIDs()) })
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxHeight() != want.MaxHeight() || got.Len() != want.Len() {
			t.Fatalf("%s: %d classes, max height %d; on all of WordNet %d, %d", name, got.Len(), got.MaxHeight(), want.Len(), want.MaxHeight())
		}
		for i := range want.Len() {
			for j := range want.Len() {
				if g, w := got.Distance(i, j), want.Distance(i, j); g != w {
					t.Errorf("%s: Distance(%d, %d) = %v, on all of WordNet %v", name, i, j, g, w)
				}
			}
		}
	}
}
