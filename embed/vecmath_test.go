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
