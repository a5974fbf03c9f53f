package simstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/lcl-project/lcl/internal/bounded"
)

// SchemaVersion is the layout of keys and records this package writes. It is
// stored under the key meta/schema; Open upgrades an older store with the
// registered migrations and refuses a newer one.
//
//	1  the first layout
//	2  one record per run: a grid run's duplicate "train-…" records are gone
const SchemaVersion = 2

var (
	// ErrNotFound is returned (wrapped) when a record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLocked is returned when another process has the store open.
	ErrLocked = errors.New("store is in use by another process")
	// ErrDamaged is returned (wrapped) by Open for a store it cannot open
	// without losing records: a damaged table file, a missing MANIFEST.
	ErrDamaged = errors.New("store is damaged")
	// ErrNeedsRecovery is returned (wrapped) by a read-only Open of a store
	// that a killed process left with a partly written log: opening it for
	// writing (Recover) drops the incomplete entry and keeps every
	// committed record.
	ErrNeedsRecovery = errors.New("store was not closed cleanly")
	// ErrUntrusted is returned (wrapped) by Open for a store folder that
	// someone else can write (trust.Check): lcl would believe what they put there.
	ErrUntrusted = errors.New("store folder refused")
)

// gcInterval is how often an open store rewrites value-log files that are
// mostly garbage (replaced or deleted values); Close does it once more.
const gcInterval = 10 * time.Minute

// Store is an open lcl store. It is safe for concurrent use.
type Store struct {
	db        *badger.DB
	dir       string
	readOnly  bool
	inMemory  bool
	chunkSize int

	stopGC chan struct{}
	gcDone sync.WaitGroup

	freeSpace func(dir string) (int64, error) // nil: no check (read-only, in memory)
}

// A migration upgrades a store from schema version from to from+1, inside
// one transaction that also records the new version.
type migration struct {
	from  int
	apply func(txn *badger.Txn) error
}

// migrations lists the upgrades from every older schema; add one here with
// each SchemaVersion bump.
func migrations() []migration {
	return []migration{{from: 1, apply: dropTrainDuplicates}}
}

type options struct {
	inMemory   bool
	readOnly   bool
	emptyOK    bool
	chunkSize  int
	schema     int
	migrations []migration
	freeSpace  func(dir string) (int64, error)
	waitLocked time.Duration
}

// Option configures Open.
type Option func(*options)

// InMemory opens a store that lives only in memory (tests).
func InMemory() Option { return func(o *options) { o.inMemory = true } }

// ReadOnly opens the store without writing to it. Several read-only opens may
// share a store; none may while a writer has it open.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// EmptyIfMissing makes a read-only Open of a folder that holds no store
// (missing or empty) return an empty store, kept in memory and never
// written, instead of ErrNotFound: commands that only read show an empty
// store without creating one.
func EmptyIfMissing() Option { return func(o *options) { o.emptyOK = true } }

// WaitLocked makes Open wait up to d for a store another process is using
// (ErrLocked), trying again every 50 ms, instead of failing at once: a
// grid's runner and the lcl train processes it runs side by side each hold
// the store for moments only.
func WaitLocked(d time.Duration) Option { return func(o *options) { o.waitLocked = d } }

// Open opens (creating if needed) the store in dir. A second process opening
// the same store gets an error wrapping ErrLocked at once (after the
// WaitLocked time, if given). A read-only open
// of a folder that holds no store yet is an error wrapping ErrNotFound
// (unless EmptyIfMissing), and never creates or changes a file; one of a
// store a killed process left unrecovered wraps ErrNeedsRecovery.
//
// Before Badger sees the folder, Open refuses (ErrDamaged) a store whose
// MANIFEST is missing while it holds tables or logs (Badger would start a
// new store over them, overwriting a table) and one whose table file has a
// damaged index (Badger panics on some in a goroutine of its own), naming
// the file; and (ErrUntrusted) a folder that someone else can write, the
// rule plugins follow (trust.Check).
//
// A store opened for writing checks the free disk space before it opens
// and before every write (ErrNoSpace): Badger writes through memory-mapped
// files, and a full disk would otherwise kill the process with SIGBUS.
func Open(dir string, opts ...Option) (*Store, error) {
	o := options{schema: SchemaVersion, migrations: migrations(), freeSpace: diskFree}
	for _, f := range opts {
		f(&o)
	}
	if o.chunkSize == 0 {
		o.chunkSize = DefaultChunkSize
		if o.inMemory {
			o.chunkSize = inMemoryChunkSize
		}
	}
	deadline := time.Now().Add(o.waitLocked)
	for {
		s, err := open(dir, o)
		left := time.Until(deadline)
		if !errors.Is(err, ErrLocked) || left <= 0 {
			return s, err
		}
		time.Sleep(min(50*time.Millisecond, left))
	}
}

// open is one attempt of Open with its options resolved.
func open(dir string, o options) (*Store, error) {
	// Values above 1 MiB go to the value log; a chunk (≤ DefaultChunkSize)
	// must fit one value-log file and, for in-memory stores, one transaction
	// (15% of the memtable). SyncWrites makes a commit durable before it
	// returns, so a crash keeps every committed record.
	bo := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithInMemory(o.inMemory).
		WithReadOnly(o.readOnly).
		WithNumVersionsToKeep(1).
		WithMemTableSize(memTableSize).
		WithValueLogFileSize(128 << 20).
		WithSyncWrites(!o.inMemory).
		WithCompactL0OnClose(true).
		WithVerifyValueChecksum(true)
	name := dir
	if o.inMemory {
		bo = bo.WithDir("").WithValueDir("")
		dir, name = "", ""
	} else {
		if !o.readOnly {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("simstore: create %s: %w", bounded.Quote(dir), err)
			}
		}
		err := checkFolder(dir, !o.readOnly)
		if errors.Is(err, ErrNotFound) && o.readOnly && o.emptyOK {
			// Nothing to read: an empty store that writes nothing anywhere.
			o.inMemory, o.chunkSize = true, inMemoryChunkSize
			bo = bo.WithInMemory(true).WithReadOnly(false).WithSyncWrites(false).WithDir("").WithValueDir("")
			dir = ""
		} else if err != nil && (o.readOnly || !errors.Is(err, ErrNotFound)) {
			return nil, err
		}
	}
	s := &Store{dir: name, readOnly: o.readOnly, inMemory: o.inMemory, chunkSize: o.chunkSize, stopGC: make(chan struct{})}
	if !o.readOnly && !o.inMemory {
		s.freeSpace = o.freeSpace
		// Opening for writing maps a fresh memtable file.
		if err := s.checkSpace(0); err != nil {
			return nil, err
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("simstore: %s: %w (another lcl is using it; wait for it or use --store DIR)", dir, ErrLocked)
		}
		if m := damagedTable.FindStringSubmatch(err.Error()); m != nil {
			return nil, damagedTableError(dir, filepath.Base(m[1]))
		}
		// Badger's wrapping does not unwrap: match the message too.
		if errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()) {
			return nil, tagged(ErrNeedsRecovery, "simstore: %s was not closed cleanly (an lcl was killed while writing): its log ends in an incomplete entry; run `lcl store recover` (or any command that writes to the store) to drop it, which keeps every committed record",
				bounded.Quote(dir))
		}
		return nil, fmt.Errorf("simstore: open %s: %s", bounded.Quote(dir), oneLine(err.Error()))
	}
	s.db = db
	if err := s.checkSchema(o); err != nil {
		db.Close()
		return nil, err
	}
	if !o.readOnly {
		if err := s.recoverPending(); err != nil {
			db.Close()
			return nil, err
		}
	}
	if !o.readOnly && !o.inMemory {
		s.gcDone.Add(1)
		go s.gcLoop()
	}
	return s, nil
}

func (s *Store) storedSchema() (int, bool, error) {
	var v int
	found := false
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(keySchema))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return item.Value(func(b []byte) error {
			n, err := strconv.Atoi(string(b))
			if err != nil {
				return corrupt([]byte(keySchema), "schema version %q is not a number", b)
			}
			v = n
			return nil
		})
	})
	if err != nil {
		return 0, false, fmt.Errorf("simstore: %s: read schema version: %w", s.dir, err)
	}
	return v, found, nil
}

// checkSchema records the schema version of a new store, upgrades an older
// one step by step (each step one transaction), and refuses a newer one.
func (s *Store) checkSchema(o options) error {
	v, found, err := s.storedSchema()
	if err != nil {
		return err
	}
	if !found {
		if o.readOnly {
			return nil // empty or never written: nothing to read
		}
		return s.db.Update(func(txn *badger.Txn) error {
			return txn.Set([]byte(keySchema), []byte(strconv.Itoa(o.schema)))
		})
	}
	switch {
	case v == o.schema:
		return nil
	case v > o.schema:
		return fmt.Errorf("simstore: %s has schema version %d, newer than this lcl's %d: upgrade lcl", s.dir, v, o.schema)
	case o.readOnly:
		return fmt.Errorf("simstore: %s has schema version %d, this lcl uses %d: open it once read-write to upgrade it", s.dir, v, o.schema)
	}
	for ; v < o.schema; v++ {
		var step *migration
		for i := range o.migrations {
			if o.migrations[i].from == v {
				step = &o.migrations[i]
			}
		}
		if step == nil {
			return fmt.Errorf("simstore: %s has schema version %d and this lcl cannot upgrade it to %d", s.dir, v, v+1)
		}
		err := s.db.Update(func(txn *badger.Txn) error {
			if err := step.apply(txn); err != nil {
				return err
			}
			return txn.Set([]byte(keySchema), []byte(strconv.Itoa(v+1)))
		})
		if err != nil {
			return fmt.Errorf("simstore: %s: upgrade schema %d → %d: %w", s.dir, v, v+1, err)
		}
	}
	return nil
}

func (s *Store) gcLoop() {
	defer s.gcDone.Done()
	t := time.NewTicker(gcInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
			s.gcValueLog(4)
		}
	}
}

// gcValueLog rewrites up to max value-log files of which at least half is
// garbage; it stops at the first file that is not worth rewriting.
func (s *Store) gcValueLog(max int) {
	// Rewriting a value-log file writes up to a file's size first.
	if s.checkSpace(128<<20) != nil {
		return
	}
	for i := 0; i < max; i++ {
		if s.db.RunValueLogGC(0.5) != nil {
			return
		}
	}
}

// damagedTable finds the table file in Badger's error for a table it
// cannot open (its index or last block fails the checksum).
var damagedTable = regexp.MustCompile(`Opening table: "([^"]+)"`)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Dir is the store's folder ("" in memory).
func (s *Store) Dir() string { return s.dir }

// Close reclaims value-log space, flushes and closes the store.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	close(s.stopGC)
	s.gcDone.Wait()
	if !s.readOnly && !s.inMemory {
		s.gcValueLog(2)
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("simstore: close %s: %w", s.dir, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, key []byte, kind string, meta any, data []float32) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.put(key, kind, meta, data) })
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
		d, err := streamValue(txn, item, kind, false)
		if err != nil {
			return err
		}
		data, err = d.finish(meta)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("simstore: %s %s: %w", kind, key, ErrNotFound)
	}
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		if msg := err.Error(); strings.Contains(msg, "checksum mismatch") || strings.Contains(msg, "Invalid read") {
			// Badger's value-log entry checksum (VerifyValueChecksum).
			return nil, corrupt(key, "the value log entry fails its checksum (%s)", oneLine(msg))
		}
		return nil, fmt.Errorf("simstore: read %s: %w", key, err)
	}
	return data, err
}

// Delete removes the record at key; ErrNotFound if there is none.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.Update(ctx, func(tx *Tx) error { return tx.Delete(key) })
}

// Record returns the record at a key from List: a *Article, *Vectors,
// *Matrix, *Run or *Model.
func (s *Store) Record(ctx context.Context, key string) (any, error) {
	switch kindOfKey([]byte(key)) {
	case KindArticle:
		return s.articleByKey(ctx, []byte(key))
	case KindVectors:
		return s.vectorsByKey(ctx, []byte(key))
	case KindMatrix:
		return s.GetMatrixByKey(ctx, key)
	case KindRun:
		return s.runByKey(ctx, []byte(key))
	case KindModel:
		return s.modelByKey(ctx, []byte(key))
	}
	return nil, fmt.Errorf("simstore: %q is not a record key (keys start with art/, vec/, sim/, run/ or model/): %w", key, ErrNotFound)
}

// Entry describes one stored record, for listings.
type Entry struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
	Size int64  `json:"size"` // encoded bytes, chunks included
}

// List returns the keys of every record of a kind ("" for all), in key order.
func (s *Store) List(ctx context.Context, kind string) ([]Entry, error) {
	prefix := ""
	if kind != "" {
		p, ok := kindPrefix[kind]
		if !ok {
			return nil, fmt.Errorf("simstore: unknown kind %q (kinds: article, vectors, matrix, run, model)", kind)
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
			e := Entry{Key: string(item.KeyCopy(nil)), Kind: k, Size: item.ValueSize()}
			if item.UserMeta() == userMetaChunked {
				raw, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				if m, err := decodeManifest(item.Key(), raw); err == nil {
					e.Size = int64(m.total)
				}
			}
			out = append(out, e)
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
	Bytes         int64          `json:"bytes"`      // encoded size of all records
	DiskBytes     int64          `json:"disk_bytes"` // LSM tree and value log on disk, garbage included
}

// Info counts records per kind and their size.
func (s *Store) Info(ctx context.Context) (*Info, error) {
	entries, err := s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	v, _, err := s.storedSchema()
	if err != nil {
		return nil, err
	}
	in := &Info{Dir: s.dir, SchemaVersion: v, Counts: map[string]int{}}
	if s.dir != "" {
		in.DiskBytes = diskUsage(s.dir)
	}
	for k := range kindPrefix {
		in.Counts[k] = 0
	}
	for _, e := range entries {
		in.Counts[e.Kind]++
		in.Bytes += e.Size
	}
	return in, nil
}

// diskUsage is the space the files under dir take on disk. Badger's own
// Size() is refreshed only once a minute, and an open store's value log and
// memtable files are sparse: their apparent size is much larger.
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		n += allocated(fi)
		return nil
	})
	return n
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
