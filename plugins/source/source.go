// Package source holds lcl's built-in similarity sources as
// sdk.SimilaritySource implementations, served over the plugin protocol by
// the lcl binary like any third-party source.
//
// Built in now: matrix (a C×C matrix from an .npy file). The semantic,
// visual and simrank sources are thin adapters over package similarity and
// are added here once that package is in main.
package source

import (
	"context"
	"fmt"
	"sort"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// Version is the built-in sources' version, reported by Describe.
const Version = "1.0.0"

// New returns a built-in source by name, or false.
func New(name string) (sdk.SimilaritySource, bool) {
	switch name {
	case "matrix":
		return Matrix{}, true
	}
	return nil, false
}

// Names lists the built-in sources.
func Names() []string {
	n := []string{"matrix"}
	sort.Strings(n)
	return n
}

// Matrix reads a C×C similarity matrix from an .npy file (float32 or
// float64, C order), rows and columns in the label set's class order.
type Matrix struct{}

var matrixParams = []sdk.Param{{Name: "file", Type: "string", Help: "path of a C×C .npy matrix in class order"}}

func (Matrix) Describe(context.Context) (sdk.SourceInfo, error) {
	return sdk.SourceInfo{Name: "matrix", Version: Version, Summary: "a C×C similarity matrix read from an .npy file",
		Params: matrixParams}, nil
}

func (Matrix) Compute(_ context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	v, err := sdk.ParseParams(matrixParams, req.Params)
	if err != nil {
		return nil, err
	}
	path := v.String("file")
	if path == "" {
		return nil, fmt.Errorf("matrix: parameter file is required")
	}
	r, c, data, err := npy.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if r != len(req.Classes) || c != len(req.Classes) {
		return nil, fmt.Errorf("%s: matrix is %d×%d, label set %q has %d classes", path, r, c, req.LabelSet, len(req.Classes))
	}
	return &sdk.Matrix{Rows: r, Cols: c, Data: data}, nil
}
