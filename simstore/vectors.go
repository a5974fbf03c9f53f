package simstore

import (
	"context"
	"fmt"
	"time"
)

// Vectors holds one float32 vector per class of a label set, produced by an
// embedding model.
type Vectors struct {
	LabelSet  string            `json:"label_set"`
	Model     string            `json:"model"` // embedding model id, encodes its settings
	IDs       []string          `json:"ids"`   // class ids, in class order
	Dim       int               `json:"dim"`
	Meta      map[string]string `json:"meta,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	Data      []float32         `json:"-"` // len(IDs)*Dim, row-major
}

// Row returns the vector of class i.
func (v *Vectors) Row(i int) []float32 { return v.Data[i*v.Dim : (i+1)*v.Dim] }

func (v *Vectors) prepare() error {
	if v.LabelSet == "" || v.Model == "" {
		return fmt.Errorf("simstore: vectors need a label set and a model id")
	}
	if v.Dim <= 0 || len(v.Data) != len(v.IDs)*v.Dim {
		return fmt.Errorf("simstore: vectors %s/%s: %d values for %d ids × dim %d", v.LabelSet, v.Model, len(v.Data), len(v.IDs), v.Dim)
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = time.Now().UTC()
	}
	return nil
}

// PutVectors stores (replacing) the vectors of a label set under a model id.
func (s *Store) PutVectors(ctx context.Context, v Vectors) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.PutVectors(v) })
}

// GetVectors returns the vectors of a label set under a model id.
func (s *Store) GetVectors(ctx context.Context, labelSet, model string) (*Vectors, error) {
	return s.vectorsByKey(ctx, vectorsKey(labelSet, model))
}

func (s *Store) vectorsByKey(ctx context.Context, key []byte) (*Vectors, error) {
	var v Vectors
	data, err := s.get(ctx, key, KindVectors, &v)
	if err != nil {
		return nil, err
	}
	if v.Dim <= 0 || len(data) != len(v.IDs)*v.Dim {
		return nil, corrupt(key, "payload of %d values does not match %d ids × dim %d", len(data), len(v.IDs), v.Dim)
	}
	v.Data = data
	return &v, nil
}
