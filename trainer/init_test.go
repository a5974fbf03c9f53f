package trainer

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

func TestHalfToFloat(t *testing.T) {
	for _, tc := range []struct {
		h    uint16
		want float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, float32(math.Pow(2, -24))}, {0x8001, -float32(math.Pow(2, -24))},
		{0x3555, 0.33325195}, {0x0000, 0}, {0x7c00, float32(math.Inf(1))},
	} {
		if got := halfToFloat(tc.h); got != tc.want {
			t.Errorf("halfToFloat(%#04x) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// An init file in half precision loads converted, the skipped classifier
// keeps the model's own values, and mismatches come in one error.
func TestInitWeightsApply(t *testing.T) {
	if err := torch.ManualSeed(1); err != nil {
		t.Fatal(err)
	}
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before, _ := m.State().Copy()
	var ts []safetensors.Tensor
	for _, n := range before {
		// Every value becomes 0.5 in F16 (0x3800), except the classifier's:
		// it is skipped, so its file tensors may have any shape.
		half := make([]byte, 0, len(n.Data)/2)
		for range len(n.Data) / 4 {
			half = binary.LittleEndian.AppendUint16(half, 0x3800)
		}
		shape := n.Shape
		if strings.HasPrefix(n.Name, "fc.") {
			shape = append([]int64{9}, n.Shape[1:]...)
			half = make([]byte, 2*9*len(n.Data)/4/int(n.Shape[0]))
		}
		ts = append(ts, safetensors.Tensor{Name: n.Name, DType: "F16", Shape: shape, Data: half})
	}
	path := filepath.Join(t.TempDir(), "w.safetensors")
	write := func(ts []safetensors.Tensor) {
		var b bytes.Buffer
		if err := safetensors.Write(&b, ts, nil); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, b.Bytes(), 0o644)
	}
	write(ts)
	w, err := readInit(path, []string{"fc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.apply(m, []string{"fc"}); err != nil {
		t.Fatal(err)
	}
	after, _ := m.State().Copy()
	for i, n := range after {
		f := math.Float32frombits(binary.LittleEndian.Uint32(n.Data))
		if strings.HasPrefix(n.Name, "fc.") {
			if !bytes.Equal(n.Data, before[i].Data) {
				t.Errorf("%s: the skipped classifier changed", n.Name)
			}
		} else if f != 0.5 {
			t.Errorf("%s[0] = %v, want 0.5 from the F16 file", n.Name, f)
		}
	}
	// Without the skip: the classifier's shapes; a missing and an extra tensor.
	ts = append(ts[1:], safetensors.Tensor{Name: "extra.weight", DType: "F32", Shape: []int64{1}, Data: make([]byte, 4)})
	write(ts)
	w, _ = readInit(path, nil)
	err = w.apply(m, []string{"fc"})
	for _, want := range []string{"missing 1: " + before[0].Name, "unexpected 1: extra.weight", "fc.weight (file [9 32], model [4 32])"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mismatch error %v, want it to contain %q", err, want)
		}
	}
	if w, _ := readInit(path, []string{"head"}); w.apply(m, []string{"fc"}) == nil {
		t.Error("--init-skip of a module the model lacks accepted")
	}
}
