//go:build e2e

package simstore

import (
	"context"
	"testing"
)

// A 5000×5000 float32 matrix is 100 MB: stored in 4 MiB chunks.
func TestHugeMatrixRoundTrip(t *testing.T) {
	s := testStore(t)
	ctx := context.Background()
	m := squareMatrix(5000, func(i int) float32 { return float32(i%4999) / 3 })
	key, err := s.PutMatrix(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMatrixByKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got.Data, m.Data) {
		t.Fatal("100 MB matrix read back differs")
	}
}
