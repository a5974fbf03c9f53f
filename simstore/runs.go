package simstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Run is the result of one training run.
type Run struct {
	ID        string          `json:"id"`             // digest of the full configuration
	Config    json.RawMessage `json:"config"`         // the run's configuration as JSON
	Status    string          `json:"status"`         // running, done, failed
	Top1      []float64       `json:"top1,omitempty"` // final test top-1 per model (peers: one each)
	Top5      []float64       `json:"top5,omitempty"`
	Epochs    json.RawMessage `json:"epochs,omitempty"` // per-epoch metrics
	Dir       string          `json:"dir,omitempty"`    // run directory (checkpoints, logs)
	UpdatedAt time.Time       `json:"updated_at"`
}

func (r *Run) prepare() error {
	if r.ID == "" {
		return fmt.Errorf("simstore: run needs an id")
	}
	r.UpdatedAt = time.Now().UTC()
	return nil
}

// PutRun stores (replacing) a run result.
func (s *Store) PutRun(ctx context.Context, r Run) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.PutRun(r) })
}

// GetRun returns a run by id.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	return s.runByKey(ctx, runKey(id))
}

func (s *Store) runByKey(ctx context.Context, key []byte) (*Run, error) {
	var r Run
	if _, err := s.get(ctx, key, KindRun, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListRuns returns every stored run, in id order.
func (s *Store) ListRuns(ctx context.Context) ([]Run, error) {
	var out []Run
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte(prefixRun + "/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			var r Run
			val, err := readValue(txn, item)
			if err != nil {
				return err
			}
			if _, err := decode(item.Key(), KindRun, val, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
