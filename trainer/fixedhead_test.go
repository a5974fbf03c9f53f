package trainer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// embedClassifier keeps every inner product of the class vectors (so their
// norms and cosines), is the same for the same seed and differs for
// another, and refuses vectors wider than the features.
func TestEmbedClassifier(t *testing.T) {
	const c, k, d = 5, 4, 9
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float32, c*k)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	out, err := embedClassifier(v, c, k, d, 7)
	if err != nil {
		t.Fatal(err)
	}
	dot := func(m []float32, w, a, b int) float64 {
		s := 0.0
		for i := range w {
			s += float64(m[a*w+i]) * float64(m[b*w+i])
		}
		return s
	}
	for a := range c {
		for b := range c {
			if got, want := dot(out, d, a, b), dot(v, k, a, b); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("inner product of classes %d, %d: %g after the map, %g before", a, b, got, want)
			}
		}
	}
	again, _ := embedClassifier(v, c, k, d, 7)
	other, _ := embedClassifier(v, c, k, d, 8)
	same, differ := true, false
	for i := range out {
		same = same && again[i] == out[i]
		differ = differ || other[i] != out[i]
	}
	if !same || !differ {
		t.Errorf("same seed gives the same map: %v; another seed another: %v", same, differ)
	}
	if _, err := embedClassifier(v, c, k, k-1, 7); err == nil || !strings.Contains(err.Error(), "at least 4 wide") {
		t.Errorf("vectors wider than the features: %v", err)
	}
	if _, err := embedClassifier(v[1:], c, k, d, 7); err == nil {
		t.Error("a short matrix was accepted")
	}
}
