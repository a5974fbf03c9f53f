package lossref

import (
	"math"
	"math/rand/v2"
)

// Helpers for tests that hold float32 arrays (libtorch's): their values as
// this package's inputs, and a target matrix to feed both.

// Rows returns v, n rows of c values, as float64 rows.
func Rows(v []float32, n, c int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = Float64s(v[i*c : (i+1)*c])
	}
	return out
}

// Float64s returns v as float64 values (nil for nil).
func Float64s(v []float32) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Normal32 is n draws from the standard normal distribution by r, as
// float32 values (logits, inputs).
func Normal32(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// Labels returns y as ints.
func Labels(y []int64) []int {
	out := make([]int, len(y))
	for i, v := range y {
		out[i] = int(v)
	}
	return out
}

// NearbyTargets is a c×c target matrix (row-major) with its mass on nearby
// classes, row i being 1/(1+|i−j|) normalised to sum 1, and then one entry
// (row 1, column c−1) zeroed: soft targets with a zero among them.
func NearbyTargets(c int) []float32 {
	T := make([]float32, c*c)
	for i := range c {
		s := 0.0
		for j := range c {
			s += 1 / (1 + math.Abs(float64(i-j)))
		}
		for j := range c {
			T[i*c+j] = float32(1 / (1 + math.Abs(float64(i-j))) / s)
		}
	}
	T[c+c-1] = 0
	return T
}
