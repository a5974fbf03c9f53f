package similarity

import (
	"math"
	"testing"
)

func TestCompare(t *testing.T) {
	// Upper triangles (0.9, 0.5, 0.1) and (0.2, 0.4, 0.6): ranks reversed.
	a := &Matrix{Data: []float32{1, 0.9, 0.5, 0.9, 1, 0.1, 0.5, 0.1, 1}, IDs: []string{"x", "y", "z"}, LabelSet: "toy", Label: "toy/visual"}
	b := &Matrix{Data: []float32{1, 0.2, 0.4, 0.2, 1, 0.6, 0.4, 0.6, 1}, IDs: []string{"x", "y", "z"}, Label: "b.npy"}
	other := &Matrix{Data: a.Data, IDs: a.IDs, LabelSet: "zoo", Label: "zoo/lca"}
	small := &Matrix{Data: []float32{1, 0, 0, 1}, IDs: []string{"x", "y"}, Label: "s.csv"}
	for _, c := range []struct {
		a, b  *Matrix
		rho   float64
		pairs int
		err   string
	}{
		{a, a, 1, 3, ""},
		{a, b, -1, 3, ""},
		{b, other, -1, 3, ""}, // a file has no label set to disagree with
		{a, small, 0, 0, "toy/visual has 3 classes, s.csv has 2"},
		{a, other, 0, 0, "toy/visual is a matrix of toy, zoo/lca of zoo"},
	} {
		rho, pairs, err := Compare(c.a, c.b)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Compare(%s, %s): %v, want %q", c.a.Label, c.b.Label, err, c.err)
			}
			continue
		}
		if err != nil || math.Abs(rho-c.rho) > 1e-12 || pairs != c.pairs {
			t.Errorf("Compare(%s, %s) = %v, %d, %v; want %v, %d", c.a.Label, c.b.Label, rho, pairs, err, c.rho, c.pairs)
		}
	}
}
