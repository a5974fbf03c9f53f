package simstore

import (
	"context"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// Tx is a write transaction: every record put or deleted through it is
// committed together, or none is. Get a Tx from Store.Update.
type Tx struct {
	s    *Store
	ctx  context.Context
	txn  *badger.Txn
	gens []string // chunk generations written for this transaction
}

// Update runs fn in one write transaction and commits it when fn returns nil.
// When fn returns an error, or the commit fails, nothing fn wrote is kept.
// Records larger than the chunk size are written in chunks before the commit
// and become visible with it; a crash before the commit leaves the old value
// (the orphaned chunks are removed by the next Open).
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("simstore: %s is open read-only", s.dir)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tx := &Tx{s: s, ctx: ctx}
	err := s.db.Update(func(txn *badger.Txn) error {
		tx.txn = txn
		return fn(tx)
	})
	if err != nil && len(tx.gens) > 0 {
		if derr := s.dropGenerations(tx.gens); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return err
}

// PutMatrix stores a matrix under its label set, kind and parameter digest and
// returns the key.
func (tx *Tx) PutMatrix(m Matrix) (string, error) {
	key, err := m.prepare()
	if err != nil {
		return "", err
	}
	return string(key), tx.put(key, KindMatrix, m, m.Data)
}

// PutVectors stores (replacing) the vectors of a label set under a model id.
func (tx *Tx) PutVectors(v Vectors) error {
	if err := v.prepare(); err != nil {
		return err
	}
	return tx.put(vectorsKey(v.LabelSet, v.Model), KindVectors, v, v.Data)
}

// PutArticle stores (replacing) the article of one class.
func (tx *Tx) PutArticle(a Article) error {
	if err := a.prepare(); err != nil {
		return err
	}
	return tx.put(articleKey(a.LabelSet, a.ClassID), KindArticle, a, nil)
}

// PutRun stores (replacing) a run result.
func (tx *Tx) PutRun(r Run) error {
	if err := r.prepare(); err != nil {
		return err
	}
	return tx.put(runKey(r.ID), KindRun, r, nil)
}

// Delete removes the record at key (as listed by Store.List); ErrNotFound if
// there is none.
func (tx *Tx) Delete(key string) error {
	if err := tx.s.checkSpace(0); err != nil {
		return err
	}
	if kindOfKey([]byte(key)) == "" {
		return fmt.Errorf("simstore: %q is not a record key (keys start with art/, vec/, sim/, run/ or model/)", key)
	}
	if _, err := tx.txn.Get([]byte(key)); errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("simstore: %s: %w", key, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("simstore: delete %s: %w", key, err)
	}
	if err := tx.dropChunksOf([]byte(key)); err != nil {
		return err
	}
	if err := tx.txn.Delete([]byte(key)); err != nil {
		return fmt.Errorf("simstore: delete %s: %w", key, err)
	}
	return nil
}

func (tx *Tx) put(key []byte, kind string, meta any, data []float32) error {
	if err := tx.ctx.Err(); err != nil {
		return err
	}
	enc, err := newEncoding(kind, meta, data)
	if err != nil {
		return err
	}
	size := enc.len()
	if size > MaxValueSize {
		return fmt.Errorf("simstore: %s is %d bytes, over the store's limit of %d bytes per record", key, size, MaxValueSize)
	}
	if err := tx.s.checkSpace(int64(size)); err != nil {
		return err
	}
	if err := tx.dropChunksOf(key); err != nil {
		return err
	}
	if size <= tx.s.chunkSize {
		if err := tx.txn.Set(key, enc.bytes()); err != nil {
			return fmt.Errorf("simstore: write %s: %w", key, err)
		}
		return nil
	}
	m, err := tx.s.writeChunks(tx.ctx, enc)
	tx.gens = append(tx.gens, m.gen)
	if err != nil {
		return fmt.Errorf("simstore: write %s: %w", key, err)
	}
	if err := tx.txn.SetEntry(badger.NewEntry(key, m.encode()).WithMeta(userMetaChunked)); err != nil {
		return fmt.Errorf("simstore: write %s: %w", key, err)
	}
	if err := tx.txn.Delete(pendingKey(m.gen)); err != nil {
		return fmt.Errorf("simstore: write %s: %w", key, err)
	}
	return nil
}

// dropChunksOf deletes the chunks of the value now at key, if it is chunked.
// A manifest that does not decode leaves its chunks behind: they are
// unreachable and cost only space.
func (tx *Tx) dropChunksOf(key []byte) error {
	item, err := tx.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simstore: read %s: %w", key, err)
	}
	if item.UserMeta() != userMetaChunked {
		return nil
	}
	raw, err := item.ValueCopy(nil)
	if err != nil {
		return fmt.Errorf("simstore: read %s: %w", key, err)
	}
	m, err := decodeManifest(key, raw)
	if err != nil {
		return nil
	}
	return deleteChunks(tx.txn, m.gen)
}
