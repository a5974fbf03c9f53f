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

// PutVectors stores (replacing) the vectors of a label set under a model id.
func (s *Store) PutVectors(ctx context.Context, v Vectors) error {
	if v.LabelSet == "" || v.Model == "" {
		return fmt.Errorf("simstore: vectors need a label set and a model id")
	}
	if v.Dim <= 0 || len(v.Data) != len(v.IDs)*v.Dim {
		return fmt.Errorf("simstore: vectors %s/%s: %d values for %d ids × dim %d", v.LabelSet, v.Model, len(v.Data), len(v.IDs), v.Dim)
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = time.Now().UTC()
	}
	return s.put(ctx, vectorsKey(v.LabelSet, v.Model), KindVectors, v, v.Data)
}

// GetVectors returns the vectors of a label set under a model id.
func (s *Store) GetVectors(ctx context.Context, labelSet, model string) (*Vectors, error) {
	var v Vectors
	data, err := s.get(ctx, vectorsKey(labelSet, model), KindVectors, &v)
	if err != nil {
		return nil, err
	}
	if len(data) != len(v.IDs)*v.Dim {
		return nil, &CorruptError{Key: string(vectorsKey(labelSet, model)), Reason: "payload does not match ids × dim"}
	}
	v.Data = data
	return &v, nil
}
