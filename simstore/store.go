package simstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

// SchemaVersion is the layout of keys and records this package writes.
const SchemaVersion = 1

var (
	// ErrNotFound is returned (wrapped) when a record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLocked is returned when another process has the store open.
	ErrLocked = errors.New("store is in use by another process")
)

// Store is an open lcl store. It is safe for concurrent use.
type Store struct {
	db  *badger.DB
	dir string
}

type options struct {
	inMemory bool
	readOnly bool
}

// Option configures Open.
type Option func(*options)

// InMemory opens a store that lives only in memory (tests).
func InMemory() Option { return func(o *options) { o.inMemory = true } }

// ReadOnly opens the store without writing to it.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// Open opens (creating if needed) the store in dir. A second process opening
// the same store gets an error wrapping ErrLocked at once.
func Open(dir string, opts ...Option) (*Store, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	bo := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithInMemory(o.inMemory).
		WithReadOnly(o.readOnly).
		WithNumVersionsToKeep(1).
		WithMemTableSize(64 << 20).
		WithValueLogFileSize(256 << 20).
		WithCompactL0OnClose(true)
	if o.inMemory {
		bo = bo.WithDir("").WithValueDir("")
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("simstore: create %s: %w", dir, err)
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("simstore: %s: %w (another lcl is using it; wait for it or use --store DIR)", dir, ErrLocked)
		}
		return nil, fmt.Errorf("simstore: open %s: %w", dir, err)
	}
	s := &Store{db: db, dir: dir}
	if !o.readOnly {
		if err := s.initSchema(); err != nil {
			db.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *Store) initSchema() error {
	return s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(keySchema))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return txn.Set([]byte(keySchema), []byte(fmt.Sprint(SchemaVersion)))
		}
		if err != nil {
			return fmt.Errorf("simstore: read schema version: %w", err)
		}
		return item.Value(func(v []byte) error {
			if string(v) != fmt.Sprint(SchemaVersion) {
				return fmt.Errorf("simstore: %s has schema version %s, this lcl uses %d", s.dir, v, SchemaVersion)
			}
			return nil
		})
	})
}

// Dir is the store's folder ("" in memory).
func (s *Store) Dir() string { return s.dir }

// Close flushes and closes the store.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

func (s *Store) put(ctx context.Context, key []byte, kind string, meta any, data []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	val, err := encode(kind, meta, data)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, val) }); err != nil {
		return fmt.Errorf("simstore: write %s: %w", key, err)
	}
	return nil
}

func (s *Store) get(ctx context.Context, key []byte, kind string, meta any) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var data []float32
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			var derr error
			data, derr = decode(key, kind, v, meta)
			return derr
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("simstore: %s %s: %w", kind, key, ErrNotFound)
	}
	return data, err
}

// Entry describes one stored record, for listings.
type Entry struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
}

// List returns the keys of every record of a kind ("" for all), in key order.
func (s *Store) List(ctx context.Context, kind string) ([]Entry, error) {
	prefix := ""
	if kind != "" {
		p, ok := kindPrefix[kind]
		if !ok {
			return nil, fmt.Errorf("simstore: unknown kind %q (kinds: article, vectors, matrix, run)", kind)
		}
		prefix = p + "/"
	}
	var out []Entry
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			k := kindOfKey(item.Key())
			if k == "" {
				continue
			}
			out = append(out, Entry{Key: string(item.KeyCopy(nil)), Kind: k, Size: item.ValueSize()})
		}
		return nil
	})
	return out, err
}

// Info summarises a store.
type Info struct {
	Dir           string         `json:"dir"`
	SchemaVersion int            `json:"schema_version"`
	Counts        map[string]int `json:"counts"`
	Bytes         int64          `json:"bytes"`
}

// Info counts records per kind and their size.
func (s *Store) Info(ctx context.Context) (*Info, error) {
	entries, err := s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	in := &Info{Dir: s.dir, SchemaVersion: SchemaVersion, Counts: map[string]int{}}
	for k := range kindPrefix {
		in.Counts[k] = 0
	}
	for _, e := range entries {
		in.Counts[e.Kind]++
		in.Bytes += e.Size
	}
	return in, nil
}

// DefaultDir is $LCL_STORE, else $XDG_DATA_HOME/lcl/store, else
// ~/.local/share/lcl/store.
func DefaultDir() string {
	if d := os.Getenv("LCL_STORE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "lcl", "store")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "lcl", "store")
	}
	return ".lcl/store"
}
