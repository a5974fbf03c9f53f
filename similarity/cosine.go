package similarity

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// cosineBlock is how many rows one matrix product of Cosine covers: its
// float64 scratch is cosineBlock × C (45 MB at 21,843 classes).
const cosineBlock = 256

// Cosine returns the row-major matrix of cosines between the rows of x. A
// zero row has no direction: that is an error naming the row via name(i).
func Cosine(x [][]float64, name func(i int) string) ([]float32, error) {
	return cosine(context.Background(), x, name, nil, true)
}

// cosine computes the upper triangle block row by block row, each block a
// float64 matrix product (gonum BLAS) of the rows scaled to unit length,
// rounded once to float32, and with mirror its mirror image: 21,843 doc2vec
// vectors take one float32 C×C matrix and a block scratch per CPU. bar,
// when given, gets one unit per block row.
func cosine(ctx context.Context, x [][]float64, name func(i int) string, bar Progress, mirror bool) ([]float32, error) {
	c := len(x)
	if c == 0 {
		return nil, nil
	}
	d := len(x[0])
	a := make([]float64, c*d)
	for i, r := range x {
		if len(r) != d {
			return nil, fmt.Errorf("row %d (%s) has %d values, the first row %d", i+1, name(i), len(r), d)
		}
		s := 0.0
		for _, v := range r {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("row %d (%s) has a non-finite value", i+1, name(i))
			}
			s += v * v
		}
		if s == 0 {
			return nil, fmt.Errorf("row %d (%s) is all zeros: cosine similarity is undefined", i+1, name(i))
		}
		norm := math.Sqrt(s)
		for k, v := range r {
			a[i*d+k] = v / norm
		}
	}
	out := make([]float32, c*c)
	blocks := (c + cosineBlock - 1) / cosineBlock
	scratch := make(chan []float64, runtime.GOMAXPROCS(0))
	for range cap(scratch) {
		scratch <- make([]float64, cosineBlock*c)
	}
	err := parallelDynamicCtx(ctx, blocks, func(bi int) {
		i0, i1 := bi*cosineBlock, min(bi*cosineBlock+cosineBlock, c)
		rows, cols := i1-i0, c-i0
		buf := <-scratch
		defer func() { scratch <- buf }()
		g := blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: buf[:rows*cols]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1,
			blas64.General{Rows: rows, Cols: d, Stride: d, Data: a[i0*d : i1*d]},
			blas64.General{Rows: cols, Cols: d, Stride: d, Data: a[i0*d:]},
			0, g)
		for i := i0; i < i1; i++ {
			gi := g.Data[(i-i0)*cols+(i-i0) : (i-i0+1)*cols]
			row := out[i*c+i : (i+1)*c]
			for j, v := range gi {
				row[j] = float32(v)
			}
		}
		// The mirror image, written a row segment at a time.
		for j := i0; j < c && mirror; j++ {
			seg := out[j*c+i0 : j*c+i1]
			for i := range seg {
				if i0+i < j {
					seg[i] = out[(i0+i)*c+j]
				}
			}
		}
		if bar != nil {
			bar.Add(1)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
