package simstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Model is a trained embedding model kept so later label sets reuse it
// instead of training again (lcl embed's doc2vec corpus model). The store
// does not interpret it: Header holds the trainer's own description (its
// settings, vocabulary and document tags), Parts the lengths of the float32
// matrices laid end to end in Data.
type Model struct {
	ID        string            `json:"id"` // encodes every input: corpus, settings, seed
	Meta      map[string]string `json:"meta,omitempty"`
	Header    json.RawMessage   `json:"header"`
	Parts     []int             `json:"parts"`
	CreatedAt time.Time         `json:"created_at"`
	Data      []float32         `json:"-"`
}

func modelKey(id string) []byte { return makeKey(prefixModel, id) }

func (m *Model) prepare() error {
	if m.ID == "" {
		return fmt.Errorf("simstore: a model needs an id")
	}
	n := 0
	for _, p := range m.Parts {
		if p < 0 {
			return fmt.Errorf("simstore: model %s: part of %d values", m.ID, p)
		}
		n += p
	}
	if n != len(m.Data) {
		return fmt.Errorf("simstore: model %s: parts of %d values, data holds %d", m.ID, n, len(m.Data))
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now().UTC()
	}
	return nil
}

// PutModel stores (replacing) a model under its id.
func (s *Store) PutModel(ctx context.Context, m Model) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.PutModel(m) })
}

// PutModel stores (replacing) a model under its id.
func (tx *Tx) PutModel(m Model) error {
	if err := m.prepare(); err != nil {
		return err
	}
	return tx.put(modelKey(m.ID), KindModel, m, m.Data)
}

// GetModel returns the model stored under id; ErrNotFound if there is none.
func (s *Store) GetModel(ctx context.Context, id string) (*Model, error) {
	return s.modelByKey(ctx, modelKey(id))
}

// LatestModel returns the most recently created model without its values
// (Data is nil; see MatrixInfo), or ErrNotFound when the store holds none.
func (s *Store) LatestModel(ctx context.Context) (*Model, error) {
	entries, err := s.List(ctx, KindModel)
	if err != nil {
		return nil, err
	}
	var best *Model
	for _, e := range entries {
		var m Model
		if err := s.metaOnly(ctx, []byte(e.Key), KindModel, &m); err != nil {
			return nil, err
		}
		if best == nil || m.CreatedAt.After(best.CreatedAt) {
			best = &m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("simstore: no model stored: %w", ErrNotFound)
	}
	return best, nil
}

func (s *Store) modelByKey(ctx context.Context, key []byte) (*Model, error) {
	var m Model
	data, err := s.get(ctx, key, KindModel, &m)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, p := range m.Parts {
		n += p
	}
	if n != len(data) {
		return nil, corrupt(key, "payload of %d values does not match parts adding up to %d", len(data), n)
	}
	m.Data = data
	return &m, nil
}

// Part returns the i-th matrix of the model's data (shared storage).
func (m *Model) Part(i int) []float32 {
	off := 0
	for _, p := range m.Parts[:i] {
		off += p
	}
	return m.Data[off : off+m.Parts[i]]
}
