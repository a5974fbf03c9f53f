package source

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/sdk"
)

func TestMatrixSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.npy")
	if err := npy.WriteFile(path, 2, 2, []float64{1, 0.3, 0.3, 1}); err != nil {
		t.Fatal(err)
	}
	two := []sdk.Class{{Index: 0, ID: "a"}, {Index: 1, ID: "b"}}
	src, ok := New("matrix")
	if !ok {
		t.Fatal("no matrix source")
	}
	m, err := src.Compute(context.Background(), sdk.SimilarityRequest{LabelSet: "ab", Classes: two, Params: map[string]string{"file": path}})
	if err != nil || m.Rows != 2 || m.At(0, 1) != 0.3 {
		t.Fatalf("Compute = %+v, %v", m, err)
	}
	tests := []struct {
		name    string
		classes []sdk.Class
		params  map[string]string
		want    string
	}{
		{"no file", two, nil, "parameter file is required"},
		{"wrong size", append(two, sdk.Class{Index: 2, ID: "c"}), map[string]string{"file": path}, `matrix is 2×2, label set "ab" has 3 classes`},
		{"missing", two, map[string]string{"file": path + ".nope"}, "no such file"},
		{"unknown param", two, map[string]string{"fiel": path}, `unknown parameter "fiel"`},
	}
	for _, tt := range tests {
		_, err := src.Compute(context.Background(), sdk.SimilarityRequest{LabelSet: "ab", Classes: tt.classes, Params: tt.params})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
