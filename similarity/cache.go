package similarity

import (
	"context"
	"errors"
	"fmt"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

// CacheStore keeps computed matrices by label set, source, effective
// parameters and input digests (*simstore.Store).
type CacheStore interface {
	// MatrixInfo is the matrix at a key without its values.
	MatrixInfo(ctx context.Context, key string) (*simstore.Matrix, error)
}

// Hit is a stored matrix found by Cached.
type Hit struct {
	Key string
	// Matrix is the stored matrix's classes and provenance, without its
	// values (a cache hit of a 21,843-class matrix does not read 1.9 GB).
	Matrix *simstore.Matrix
	// Provenance is what the source would have computed it from: its
	// effective parameters and input digests.
	Provenance
}

// Cached finds the stored matrix that src would compute for set with
// params: src says, without computing, what its effective parameters and
// inputs would be (a Preparer), and a matrix of that source for the same
// parameters and inputs is stored. It returns nil and no error when none is
// stored or src cannot say (it is no Preparer); a parameter src refuses is
// an error.
func Cached(ctx context.Context, st CacheStore, src Source, set *labels.Set, params map[string]string) (*Hit, error) {
	prep, ok := src.(Preparer)
	if !ok {
		return nil, nil
	}
	prov, err := prep.Prepare(ctx, set, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	key := simstore.MatrixKey(set.Name, src.Name(), prov.Params, prov.Inputs)
	m, err := st.MatrixInfo(ctx, key)
	switch {
	case errors.Is(err, simstore.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &Hit{Key: key, Matrix: m, Provenance: prov}, nil
}

// Record is the store record of r, the matrix the source named source
// computed for set, with its provenance; tool names the program that
// computed it ("lcl v1.2.0"). The record shares r's values: a 21,843-class
// matrix (1.9 GB) is not copied to be stored.
func (r *Result) Record(set *labels.Set, source, tool string) simstore.Matrix {
	return simstore.Matrix{
		LabelSet: set.Name,
		Kind:     source,
		Classes:  r.Classes,
		Provenance: simstore.Provenance{
			Source: source,
			Params: r.Params,
			Inputs: r.Inputs,
			Tool:   tool,
		},
		Data: r.Data,
	}
}
