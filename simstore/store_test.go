package simstore

import (
	"context"
	"errors"
	"math"
	"testing"
)

func testStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMatrixRoundTripIsBitIdentical(t *testing.T) {
	s := testStore(t)
	ctx := context.Background()
	data := []float32{1, float32(math.Pi), -0, math.SmallestNonzeroFloat32, 0.1, 1, 1e-30, 0.5, 1}
	m := Matrix{LabelSet: "toy", Kind: "visual", Classes: []string{"a", "b", "c"}, Data: data,
		Provenance: Provenance{Params: map[string]string{"missing": "zero"}, Inputs: map[string]string{"attrs": "abc"}}}
	key, err := s.PutMatrix(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMatrixByKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		if math.Float32bits(got.Data[i]) != math.Float32bits(data[i]) {
			t.Fatalf("value %d: %x, want %x", i, math.Float32bits(got.Data[i]), math.Float32bits(data[i]))
		}
	}
	if _, err := s.GetMatrix(ctx, "toy", "visual", map[string]string{"missing": "mean"}, m.Provenance.Inputs); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other params: %v, want ErrNotFound", err)
	}
}
