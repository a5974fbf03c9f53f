package simstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"

	badger "github.com/dgraph-io/badger/v4"
)

// userMetaChunked marks a key whose value is a chunk manifest.
const userMetaChunked byte = 1

// DefaultChunkSize is the largest value stored under a single key; larger
// values are split into chunks of this size, written to the value log
// chunksPerTxn at a time before the record's own commit. In-memory stores
// use chunks just under 1 MiB, one per transaction: Badger keeps their values
// in the LSM tree and refuses larger ones.
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

// writeChunks stores the value enc encodes as chunks of a fresh generation,
// a few per transaction, after marking the generation pending. The
// caller commits the manifest and deletes the pending mark in one
// transaction; until then readers still see the old value. A chunk is a
// slice of the record's values where it can be (encoding.piece): a 1.9 GB
// matrix is stored without a second copy of it.
func (s *Store) writeChunks(ctx context.Context, enc *encoding) (manifest, error) {
	total := enc.len()
	if total >= bigValue {
		// Badger encodes every chunk into a fresh buffer on its way to the
		// value log: 2 bytes of garbage per byte stored, which the default
		// GC lets pile up to the size of the live heap (a 1.9 GB matrix:
		// 3.8 GB more). Collect it as it comes, while the chunks are written;
		// the live heap is mostly the record's values, which the collector
		// does not scan.
		defer debug.SetGCPercent(debug.SetGCPercent(10))
	}
	m := manifest{total: uint64(total), chunkSize: uint32(s.chunkSize), gen: newGen()}
	m.chunks = uint32((total + s.chunkSize - 1) / s.chunkSize)
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(pendingKey(m.gen), nil) }); err != nil {
		return m, err
	}
	// On disk, several chunks share a transaction: each commit is synced,
	// and a 1.9 GB matrix in 455 commits spent seconds waiting on them.
	// In-memory chunks go one per transaction (they live in the memtable).
	perTxn := uint32(chunksPerTxn)
	if s.inMemory {
		perTxn = 1
	}
	for i := uint32(0); i < m.chunks; {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		err := s.db.Update(func(txn *badger.Txn) error {
			for n := uint32(0); n < perTxn && i < m.chunks; n++ {
				lo := int(i) * s.chunkSize
				hi := min(lo+s.chunkSize, total)
				if err := txn.Set(chunkKey(m.gen, i), enc.piece(lo, hi-lo)); err != nil {
					if errors.Is(err, badger.ErrTxnTooBig) && n > 0 {
						return nil // commit these; the chunk goes in the next
					}
					return err
				}
				i++
			}
			return nil
		})
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// chunksPerTxn is how many chunks an on-disk write commits at once (64 MiB).
const chunksPerTxn = 16

// streamValue feeds the stored value of an item to d piece by piece,
// chunk after chunk from the same snapshot, without assembling it. The
// chunks a manifest names must all be there and hold its total before d
// sees a byte (d allocates the data from the sizes it reads).
//
// With metaOnly the stream stops once the meta is read (d can unmarshal it;
// nothing past the header is checked then).
func streamValue(txn *badger.Txn, item *badger.Item, kind string, metaOnly bool) (*decoder, error) {
	key := item.KeyCopy(nil)
	done := func(err error) error {
		if metaOnly && errors.Is(err, errMetaRead) {
			return nil
		}
		return err
	}
	if item.UserMeta() != userMetaChunked {
		var d *decoder
		err := item.Value(func(v []byte) error {
			var err error
			if d, err = newDecoder(key, kind, len(v)); err != nil {
				return err
			}
			d.metaOnly = metaOnly
			return d.write(v)
		})
		return d, done(err)
	}
	raw, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(key, raw)
	if err != nil {
		return nil, err
	}
	if m.total > MaxValueSize {
		return nil, corrupt(key, "chunk manifest claims %d bytes", m.total)
	}
	items := make([]*badger.Item, m.chunks)
	var held uint64
	for i := range items {
		ci, err := txn.Get(chunkKey(m.gen, uint32(i)))
		if err != nil {
			return nil, corrupt(key, "chunk %d of %d (generation %s): %v", i+1, m.chunks, m.gen, err)
		}
		items[i] = ci
		held += uint64(ci.ValueSize())
	}
	if slack := 32 * uint64(m.chunks); held+slack < m.total || held > m.total+slack {
		return nil, corrupt(key, "chunks hold %d bytes, manifest says %d", held, m.total)
	}
	d, err := newDecoder(key, kind, int(m.total))
	if err != nil {
		return nil, err
	}
	d.metaOnly = metaOnly
	for _, ci := range items {
		if err := ci.Value(d.write); err != nil {
			return d, done(err)
		}
	}
	return d, nil
}

// bigValue is the size from which writeChunks keeps the garbage of the
// store's own copies short.
const bigValue = 256 << 20

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
