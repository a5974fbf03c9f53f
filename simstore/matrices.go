package simstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Provenance says how a similarity matrix was made.
type Provenance struct {
	Source    string            `json:"source"`           // semantic, visual, simrank, lca, matrix, or a plugin name
	Params    map[string]string `json:"params,omitempty"` // every parameter that changes the result
	Inputs    map[string]string `json:"inputs,omitempty"` // input name → sha256 digest
	Tool      string            `json:"tool,omitempty"`   // lcl version or plugin version
	CreatedAt time.Time         `json:"created_at"`
}

// Matrix is a C×C class similarity matrix.
type Matrix struct {
	LabelSet   string     `json:"label_set"`
	Kind       string     `json:"kind"`    // the source name
	Classes    []string   `json:"classes"` // class ids, in class order
	Provenance Provenance `json:"provenance"`
	Data       []float32  `json:"-"` // C*C, row-major
}

// N is the number of classes.
func (m *Matrix) N() int { return len(m.Classes) }

// At returns s(i,j).
func (m *Matrix) At(i, j int) float32 { return m.Data[i*len(m.Classes)+j] }

// ParamsDigest is a short digest of the parameters and input digests: the
// cache key of a matrix, so the same inputs and settings find the same entry.
func ParamsDigest(params, inputs map[string]string) string {
	h := sha256.New()
	for _, m := range []map[string]string{params, inputs} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%s=%s\n", k, m[k])
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MatrixKey is the store key of a matrix, as shown by `lcl store ls`.
func MatrixKey(labelSet, kind string, params, inputs map[string]string) string {
	return string(matrixKey(labelSet, kind, ParamsDigest(params, inputs)))
}

// prepare checks a matrix, fills its provenance defaults and returns its key.
func (m *Matrix) prepare() ([]byte, error) {
	n := len(m.Classes)
	if m.LabelSet == "" || m.Kind == "" || n == 0 {
		return nil, fmt.Errorf("simstore: matrix needs a label set, a kind and classes")
	}
	if len(m.Data) != n*n {
		return nil, fmt.Errorf("simstore: matrix %s/%s: %d values, want %d×%d", m.LabelSet, m.Kind, len(m.Data), n, n)
	}
	if m.Provenance.CreatedAt.IsZero() {
		m.Provenance.CreatedAt = time.Now().UTC()
	}
	if m.Provenance.Source == "" {
		m.Provenance.Source = m.Kind
	}
	return matrixKey(m.LabelSet, m.Kind, ParamsDigest(m.Provenance.Params, m.Provenance.Inputs)), nil
}

// PutMatrix stores a matrix under its label set, kind and parameter digest.
// It returns the key.
func (s *Store) PutMatrix(ctx context.Context, m Matrix) (string, error) {
	var key string
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		key, err = tx.PutMatrix(m)
		return err
	})
	return key, err
}

// GetMatrix returns the matrix made with exactly these parameters and inputs.
func (s *Store) GetMatrix(ctx context.Context, labelSet, kind string, params, inputs map[string]string) (*Matrix, error) {
	return s.GetMatrixByKey(ctx, MatrixKey(labelSet, kind, params, inputs))
}

// GetMatrixByKey returns the matrix at a key from List or PutMatrix.
func (s *Store) GetMatrixByKey(ctx context.Context, key string) (*Matrix, error) {
	var m Matrix
	data, err := s.get(ctx, []byte(key), KindMatrix, &m)
	if err != nil {
		return nil, err
	}
	if len(data) != len(m.Classes)*len(m.Classes) {
		return nil, corrupt([]byte(key), "payload of %d values does not match %d classes", len(data), len(m.Classes))
	}
	m.Data = data
	return &m, nil
}

// LatestMatrix returns the most recently created matrix of a label set and
// kind, whatever its parameters (for `--source semantic` without a key).
func (s *Store) LatestMatrix(ctx context.Context, labelSet, kind string) (*Matrix, error) {
	prefix := string(makeKey(prefixMatrix, labelSet, kind)) + "/"
	entries, err := s.List(ctx, KindMatrix)
	if err != nil {
		return nil, err
	}
	var best *Matrix
	bestKey := ""
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, prefix) {
			continue
		}
		// Only the meta: a 21,843-class matrix is not read to learn its date.
		m, err := s.MatrixInfo(ctx, e.Key)
		if err != nil {
			return nil, err
		}
		if best == nil || m.Provenance.CreatedAt.After(best.Provenance.CreatedAt) {
			best, bestKey = m, e.Key
		}
	}
	if best == nil {
		return nil, fmt.Errorf("simstore: no %s matrix for label set %s: %w", kind, labelSet, ErrNotFound)
	}
	return s.GetMatrixByKey(ctx, bestKey)
}

// MatrixInfo returns the matrix at key without its values (Data is nil):
// its label set, kind, classes and provenance, read from the start of the
// record. The checksum, which covers the values, is not checked: read the
// matrix (GetMatrixByKey) before trusting it.
func (s *Store) MatrixInfo(ctx context.Context, key string) (*Matrix, error) {
	var m Matrix
	if err := s.metaOnly(ctx, []byte(key), KindMatrix, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// metaOnly reads the meta of the record of kind at key into meta, without
// its values (see MatrixInfo).
func (s *Store) metaOnly(ctx context.Context, key []byte, kind string, meta any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		d, err := streamValue(txn, item, kind, true)
		if err != nil {
			return err
		}
		if d.dataOff == 0 || len(d.head) < d.dataOff {
			return corrupt(key, "the record ends before its meta")
		}
		return d.unmarshalMeta(meta)
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("simstore: %s %s: %w", kind, key, ErrNotFound)
	}
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("simstore: read %s: %w", key, err)
	}
	return nil
}
