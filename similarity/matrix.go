package similarity

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/labels"
)

// MatrixFile imports a precomputed C×C matrix (parameter "file": CSV,
// whitespace-separated text or .npy), rows and columns in class order.
type MatrixFile struct{}

// Name implements Source.
func (MatrixFile) Name() string { return "matrix" }

// Prepare implements Preparer.
func (MatrixFile) Prepare(_ context.Context, set *labels.Set, in map[string]string) (Provenance, error) {
	p, err := newParams(in, "matrix")
	if err != nil {
		return Provenance{}, err
	}
	file := p.str("file")
	if file == "" {
		return Provenance{}, fmt.Errorf("parameter file is required (a CSV, text or .npy C×C matrix)")
	}
	d, err := digest.File(file)
	if err != nil {
		return Provenance{}, err
	}
	// The path is not part of the key: the same content elsewhere is the same matrix.
	delete(p.effective, "file")
	return Provenance{Params: p.effective, Inputs: map[string]string{"classes": ClassesDigest(set), "file": d}}, nil
}

// Compute implements Source.
func (m MatrixFile) Compute(ctx context.Context, set *labels.Set, in map[string]string) (*Result, error) {
	prov, err := m.Prepare(ctx, set, in)
	if err != nil {
		return nil, err
	}
	file := in["file"]
	data, n, err := ReadMatrixFile(file)
	if err != nil {
		return nil, err
	}
	if n != set.Len() {
		return nil, fmt.Errorf("%s: matrix is %d×%d but label set %s has %d classes", file, n, n, set.Name, set.Len())
	}
	return &Result{Classes: ClassIDs(set), Data: data, Provenance: prov}, nil
}
