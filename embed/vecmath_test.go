package embed

import (
	"math"
	"testing"

	"github.com/nlpodyssey/spago/mat"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

func TestDotAxpy(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 7, 100} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(i)+0.5, float32(n-i)
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-4*math.Max(1, want) {
			t.Errorf("dot n=%d: %g, want %g", n, got, want)
		}
		y := append([]float32(nil), b...)
		axpy(2, a, y)
		for i := range y {
			if y[i] != b[i]+2*a[i] {
				t.Errorf("axpy n=%d [%d]: %g, want %g", n, i, y[i], b[i]+2*a[i])
			}
		}
	}
}

func TestSigmoidTable(t *testing.T) {
	s := newSigmoidTable()
	for _, x := range []float32{-7, -6, -3.3, -0.01, 0, 0.5, 2, 5.99, 6, 9} {
		want := 1 / (1 + math.Exp(-float64(x)))
		if x >= maxExp {
			want = 1
		} else if x <= -maxExp {
			want = 0
		}
		if got := s.at(x); math.Abs(float64(got)-want) > 2e-3 {
			t.Errorf("σ(%g) = %g, want %g", x, got, want)
		}
	}
}

// The benchmarks behind the choice of hand-written loops (see vecmath.go).
const benchDim = 100

func benchVecs() ([]float32, []float32) {
	a, b := make([]float32, benchDim), make([]float32, benchDim)
	for i := range a {
		a[i], b[i] = float32(i)/100, float32(benchDim-i)/100
	}
	return a, b
}

var sink float32

func BenchmarkDotLoop(b *testing.B) {
	x, y := benchVecs()
	for b.Loop() {
		sink += dot(x, y)
	}
}

func BenchmarkDotGonumBLAS32(b *testing.B) {
	x, y := benchVecs()
	for b.Loop() {
		sink += blas32.Dot(blas32.Vector{N: benchDim, Inc: 1, Data: x}, blas32.Vector{N: benchDim, Inc: 1, Data: y})
	}
}

func BenchmarkDotSpago(b *testing.B) {
	x, y := benchVecs()
	for b.Loop() {
		mx := mat.NewDense[float32](mat.WithBacking(x), mat.WithShape(benchDim))
		my := mat.NewDense[float32](mat.WithBacking(y), mat.WithShape(benchDim))
		sink += mx.DotUnitary(my).Item().F32()
	}
}

func BenchmarkAxpyLoop(b *testing.B) {
	x, y := benchVecs()
	for b.Loop() {
		axpy(1e-6, x, y)
	}
}

func BenchmarkAxpyGonumBLAS32(b *testing.B) {
	x, y := benchVecs()
	vx, vy := blas32.Vector{N: benchDim, Inc: 1, Data: x}, blas32.Vector{N: benchDim, Inc: 1, Data: y}
	for b.Loop() {
		blas32.Axpy(1e-6, vx, vy)
	}
}

func BenchmarkAxpySpago(b *testing.B) {
	x, y := benchVecs()
	for b.Loop() {
		mx := mat.NewDense[float32](mat.WithBacking(x), mat.WithShape(benchDim))
		my := mat.NewDense[float32](mat.WithBacking(y), mat.WithShape(benchDim))
		my.AddInPlace(mx.ProdScalar(1e-6))
	}
}

func BenchmarkDotGonumImpl(b *testing.B) {
	x, y := benchVecs()
	var impl gonum.Implementation
	for b.Loop() {
		sink += impl.Sdot(benchDim, x, 1, y, 1)
	}
}

func BenchmarkAxpyGonumImpl(b *testing.B) {
	x, y := benchVecs()
	var impl gonum.Implementation
	for b.Loop() {
		impl.Saxpy(benchDim, 1e-6, x, 1, y, 1)
	}
}

// update must give the two axpy calls' results bit for bit (vectors stored
// by earlier versions stay reproducible), for every length's tails and for
// rows that do not start on a vector boundary.
func TestUpdateMatchesTwoAxpy(t *testing.T) {
	r := newRNG(7)
	fill := func(n int) []float32 {
		v := make([]float32, n+3)
		for i := range v {
			v[i] = float32(int32(r.next()))/(1<<31) + 1e-30
		}
		return v
	}
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 101, 300} {
		for off := 0; off < 3; off++ {
			for _, g := range []float32{0.0123, -0.25, 0, 1e-8} {
				l1, row, work := fill(n), fill(n), fill(n)
				l1, row, work = l1[off:off+n], row[off:off+n], work[3-off:3-off+n]
				wantRow := append([]float32(nil), row...)
				wantWork := append([]float32(nil), work...)
				updateGo(g, l1, wantRow, wantWork)
				update(g, l1, row, work)
				for i := range n {
					if math.Float32bits(row[i]) != math.Float32bits(wantRow[i]) ||
						math.Float32bits(work[i]) != math.Float32bits(wantWork[i]) {
						t.Fatalf("n=%d off=%d g=%g [%d]: row %g work %g, want %g %g",
							n, off, g, i, row[i], work[i], wantRow[i], wantWork[i])
					}
				}
			}
		}
	}
}

func BenchmarkUpdateFused(b *testing.B) {
	l1, row := benchVecs()
	work := make([]float32, benchDim)
	for range b.N {
		update(1e-9, l1, row, work)
	}
}

func BenchmarkUpdateTwoAxpy(b *testing.B) {
	l1, row := benchVecs()
	work := make([]float32, benchDim)
	for range b.N {
		updateGo(1e-9, l1, row, work)
	}
}
