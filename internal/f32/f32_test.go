package f32

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	v := []float32{1, -2.5, float32(math.Inf(1))}
	b := Bytes(v)
	if len(b) != 12 {
		t.Fatalf("%d bytes, want 12", len(b))
	}
	for i, x := range v {
		got := math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:]))
		if got != x {
			t.Errorf("element %d: %v, want %v", i, got, x)
		}
	}
	b[0] ^= 1 // shared, not copied
	if math.Float32bits(v[0]) == math.Float32bits(1) {
		t.Error("Bytes copied the values")
	}
	if Bytes(nil) != nil {
		t.Error("Bytes(nil) is not nil")
	}
}
