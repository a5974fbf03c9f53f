package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// A plan's fixed classifier (HAFrame's) comes as C×k class vectors whose
// norms and pairwise cosines are what matters; the model's head needs them
// as C×d, d its feature width. embedClassifier maps them by an orthonormal
// map, as HAFrame's solver does with the QR factor of a random Gaussian
// d×k matrix: a fixed random rotation keeps every norm and cosine and puts
// no class vector on the feature axes.

// fixedHeads caches the last mapped classifier: every epoch's plan sends
// the same one, and the map costs O(d·k²).
type fixedHeads struct {
	in   []float32
	k, d int
	out  []float32
}

// embed is v (c×k) mapped into d dimensions with the run's seed, from the
// cache when v and d are the last call's.
func (f *fixedHeads) embed(v []float32, c, k, d int, seed int64) ([]float32, error) {
	if f.out != nil && f.k == k && f.d == d && slices.Equal(f.in, v) {
		return f.out, nil
	}
	out, err := embedClassifier(v, c, k, d, mix(seed, 5))
	if err != nil {
		return nil, err
	}
	f.in, f.k, f.d, f.out = slices.Clone(v), k, d, out
	return out, nil
}

// embedClassifier is V·Qᵀ for the c×k matrix v, Q a d×k matrix of
// orthonormal columns: modified Gram–Schmidt of a standard Gaussian matrix
// drawn from seed (the Q of its QR factorisation up to the columns' signs).
// k > d is an error: k orthonormal directions need k dimensions.
func embedClassifier(v []float32, c, k, d int, seed uint64) ([]float32, error) {
	if k < 1 || c < 1 || len(v) != c*k {
		return nil, fmt.Errorf("fixed classifier: %d values for %d classes of %d", len(v), c, k)
	}
	if k > d {
		return nil, fmt.Errorf("fixed classifier: class vectors of %d values, the model's features have %d: "+
			"want a model whose head's input is at least %d wide (the option proj=%d of a built-in model gives it %d features)", k, d, k, k, k)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	q := make([][]float64, k) // the columns of Q
	for j := range q {
		col := make([]float64, d)
		for {
			for i := range col {
				col[i] = r.NormFloat64()
			}
			for _, p := range q[:j] {
				dot := 0.0
				for i := range col {
					dot += p[i] * col[i]
				}
				for i := range col {
					col[i] -= dot * p[i]
				}
			}
			norm := 0.0
			for _, x := range col {
				norm += x * x
			}
			// A draw (nearly) inside the span of the columns before it is
			// drawn again (probability 0 in exact arithmetic).
			if norm = math.Sqrt(norm); norm > 1e-6 {
				for i := range col {
					col[i] /= norm
				}
				break
			}
		}
		q[j] = col
	}
	out := make([]float32, c*d)
	row := make([]float64, d)
	for a := 0; a < c; a++ {
		clear(row)
		for j, col := range q {
			x := float64(v[a*k+j])
			for i := range row {
				row[i] += x * col[i]
			}
		}
		for i, x := range row {
			out[a*d+i] = float32(x)
		}
	}
	return out, nil
}
