package source

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/sdk"
)

func compute(t *testing.T, name string, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	t.Helper()
	src, ok := New(name)
	if !ok {
		t.Fatalf("no built-in source %q", name)
	}
	info, err := src.Describe(context.Background())
	if err != nil || info.Name != name || info.Version != Version {
		t.Fatalf("Describe = %+v, %v", info, err)
	}
	return src.Compute(context.Background(), req)
}

func TestBuiltinSources(t *testing.T) {
	three := []sdk.Class{{Index: 0, ID: "a", Name: "a"}, {Index: 1, ID: "b", Name: "b"}, {Index: 2, ID: "c", Name: "c"}}
	npyPath := filepath.Join(t.TempDir(), "s.npy")
	if err := npy.WriteFile(npyPath, 3, 3, []float64{1, 0.3, 0, 0.3, 1, 0.5, 0, 0.5, 1}); err != nil {
		t.Fatal(err)
	}
	r2 := 1 / math.Sqrt2
	tests := []struct {
		name, source string
		req          sdk.SimilarityRequest
		want         []float64
	}{
		{"matrix", "matrix", sdk.SimilarityRequest{Params: map[string]string{"file": npyPath}}, []float64{1, 0.3, 0, 0.3, 1, 0.5, 0, 0.5, 1}},
		{
			// a = (1,0), b = (1,1), c = (0,1): cosines 1/√2 and 0.
			"visual", "visual",
			sdk.SimilarityRequest{Attributes: []sdk.Attributes{{Name: "continuous", Names: []string{"x", "y"},
				Values: &sdk.Matrix{Rows: 3, Cols: 2, Data: []float32{1, 0, 1, 1, 0, 1}}}}},
			[]float64{1, r2, 0, r2, 1, r2, 0, r2, 1},
		},
		{
			// root → x → {a, b}, root → y → c; SimRank (C = 0.8) on parent → child edges:
			// s(a,b) = 0.8·s(x,x) = 0.8, s(a,c) = 0.8·s(x,y) = 0.8·0.8·s(root,root) = 0.64.
			"simrank on the request's hierarchy", "simrank",
			sdk.SimilarityRequest{Hierarchy: []sdk.Node{{ID: "root"}, {ID: "x", Parent: "root"}, {ID: "y", Parent: "root"},
				{ID: "a", Parent: "x"}, {ID: "b", Parent: "x"}, {ID: "c", Parent: "y"}}},
			[]float64{1, 0.8, 0.64, 0.8, 1, 0.64, 0.64, 0.64, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.LabelSet, tt.req.Classes = "abc", three
			m, err := compute(t, tt.source, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tt.want {
				if math.Abs(float64(m.Data[i])-w) > 1e-6 {
					t.Fatalf("s = %v, want %v", m.Data, tt.want)
				}
			}
		})
	}
	if _, err := compute(t, "visual", sdk.SimilarityRequest{LabelSet: "abc", Classes: three, Params: map[string]string{"atributes": "x"}}); err == nil ||
		!strings.Contains(err.Error(), "unknown parameter(s) atributes") {
		t.Fatalf("misspelt parameter: %v", err)
	}
	if _, err := compute(t, "matrix", sdk.SimilarityRequest{LabelSet: "ab", Classes: three[:2], Params: map[string]string{"file": npyPath}}); err == nil ||
		!strings.Contains(err.Error(), "3×3") {
		t.Fatalf("wrong size: %v", err)
	}
}
