package simstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// userMetaChunked marks a key whose value is a chunk manifest.
const userMetaChunked byte = 1

// DefaultChunkSize is the largest value stored under a single key; larger
// values are split into chunks of this size, each written to the value log in
// its own transaction. In-memory stores use chunks just under 1 MiB: Badger keeps their
// values in the LSM tree and refuses larger ones.
const (
	DefaultChunkSize  = 4 << 20
	inMemoryChunkSize = 1<<20 - 4<<10 // Badger (v4.9) panics on an in-memory value of exactly 1 MiB
)

// MaxValueSize is the largest encoded record (header, metadata and float32
// payload) the store accepts: 2 GiB less one byte, about a 23000×23000 matrix.
const MaxValueSize = 1<<31 - 1

func newGen() string {
	var b [genLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// writeChunks stores val as chunks of a fresh generation, each in its own
// transaction, after marking the generation pending. The caller commits the
// manifest and deletes the pending mark in one transaction; until then
// readers still see the old value.
func (s *Store) writeChunks(ctx context.Context, val []byte) (manifest, error) {
	m := manifest{total: uint64(len(val)), chunkSize: uint32(s.chunkSize), gen: newGen()}
	m.chunks = uint32((len(val) + s.chunkSize - 1) / s.chunkSize)
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(pendingKey(m.gen), nil) }); err != nil {
		return m, err
	}
	for i := uint32(0); i < m.chunks; i++ {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		lo := int(i) * s.chunkSize
		hi := min(lo+s.chunkSize, len(val))
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(chunkKey(m.gen, i), val[lo:hi]) }); err != nil {
			return m, err
		}
	}
	return m, nil
}

// readValue returns the whole stored value of an item, reassembling chunks
// read from the same snapshot.
func readValue(txn *badger.Txn, item *badger.Item) ([]byte, error) {
	key := item.KeyCopy(nil)
	raw, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	if item.UserMeta() != userMetaChunked {
		return raw, nil
	}
	m, err := decodeManifest(key, raw)
	if err != nil {
		return nil, err
	}
	if m.total > MaxValueSize {
		return nil, corrupt(key, "chunk manifest claims %d bytes", m.total)
	}
	// Grow with the chunks read: the manifest's total is checked against
	// them below, not trusted for an allocation up front.
	val := make([]byte, 0, min(m.total, 64<<20))
	for i := uint32(0); i < m.chunks; i++ {
		ci, err := txn.Get(chunkKey(m.gen, i))
		if err != nil {
			return nil, corrupt(key, "chunk %d of %d (generation %s): %v", i+1, m.chunks, m.gen, err)
		}
		if err := ci.Value(func(v []byte) error { val = append(val, v...); return nil }); err != nil {
			return nil, err
		}
	}
	if uint64(len(val)) != m.total {
		return nil, corrupt(key, "chunks hold %d bytes, manifest says %d", len(val), m.total)
	}
	return val, nil
}

// deleteChunks deletes every chunk of a generation inside txn.
func deleteChunks(txn *badger.Txn, gen string) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: chunkPrefix(gen)})
	var keys [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		keys = append(keys, it.Item().KeyCopy(nil))
	}
	it.Close()
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// dropGenerations deletes the chunks and pending marks of generations whose
// manifest was never committed.
func (s *Store) dropGenerations(gens []string) error {
	for _, g := range gens {
		err := s.db.Update(func(txn *badger.Txn) error {
			if err := deleteChunks(txn, g); err != nil {
				return err
			}
			return txn.Delete(pendingKey(g))
		})
		if err != nil {
			return fmt.Errorf("simstore: drop unfinished chunks %s: %w", g, err)
		}
	}
	return nil
}

// recoverPending drops the chunks of writes a crash left unfinished.
func (s *Store) recoverPending() error {
	var gens []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixPending)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			gens = append(gens, string(it.Item().Key()[len(prefixPending):]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.dropGenerations(gens)
}
