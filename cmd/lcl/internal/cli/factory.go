package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// Factory holds global flag values and opens shared dependencies lazily,
// once per process.
type Factory struct {
	IO *IOStreams

	StoreDir string // --store
	// StoreWait is how long to wait for a store another lcl is using
	// (--store-wait; 0: fail at once).
	StoreWait  time.Duration
	WordNetDir string // --wordnet
	JSON       bool   // --json
	Quiet      bool   // --quiet
	// RequirePinned refuses plugins without a pin (--require-pinned).
	RequirePinned bool

	mu      sync.Mutex
	store   *simstore.Store
	storeRO bool // store was opened read-only
	wn      *wordnet.DB
	wnPart  *wordnet.DB // WordNetOf's last: some synsets and their ancestors
}

// Store opens the store named by --store (once) for reading and writing.
// A read-only handle opened before (ReadStore) is closed and replaced.
func (f *Factory) Store() (*simstore.Store, error) { return f.openStore(f.StoreWait) }

// openStore is Store, waiting up to wait for a store another process uses.
func (f *Factory) openStore(wait time.Duration) (*simstore.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store != nil && !f.storeRO {
		return f.store, nil
	}
	if f.store != nil {
		if err := f.store.Close(); err != nil {
			return nil, err
		}
		f.store = nil
	}
	s, err := simstore.Open(f.storeDir(), simstore.WaitLocked(wait))
	if err != nil {
		return nil, err
	}
	f.store, f.storeRO = s, false
	return s, nil
}

// ReadStore opens the store for reading only (once), or returns the handle
// already open. Commands that only read use it: several may run side by
// side (none while a writer has the store open). It creates and changes
// nothing: a folder without a store reads as an empty store. A store a
// killed lcl left with an incomplete log entry is recovered first, as a
// writing command would (one line says so).
func (f *Factory) ReadStore() (*simstore.Store, error) {
	return f.readStore(true)
}

// readStore is ReadStore; recover false leaves a store that needs
// recovery alone (ErrNeedsRecovery): lcl store verify only reports it.
func (f *Factory) readStore(recover bool) (*simstore.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store != nil {
		return f.store, nil
	}
	dir := f.storeDir()
	s, err := simstore.Open(dir, simstore.ReadOnly(), simstore.EmptyIfMissing(), simstore.WaitLocked(f.StoreWait))
	if recover && errors.Is(err, simstore.ErrNeedsRecovery) {
		if err = simstore.Recover(dir); err != nil {
			return nil, err
		}
		f.Logf("lcl: recovered the store %s: a killed lcl had left an incomplete log entry, now dropped (every committed record is kept)", bounded.Quote(dir))
		s, err = simstore.Open(dir, simstore.ReadOnly(), simstore.EmptyIfMissing(), simstore.WaitLocked(f.StoreWait))
	}
	if err != nil {
		return nil, err
	}
	f.store, f.storeRO = s, true
	return s, nil
}

// storeDir is the store folder: --store, else simstore.DefaultDir().
func (f *Factory) storeDir() string {
	if f.StoreDir != "" {
		return f.StoreDir
	}
	return simstore.DefaultDir()
}

// WordNet opens WordNet 3.0 (once) from --wordnet, $WNHOME or the Debian path.
func (f *Factory) WordNet() (*wordnet.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wn != nil {
		return f.wn, nil
	}
	wn, err := wordnet.Open(f.WordNetDir)
	if err != nil {
		return nil, err
	}
	f.wn = wn
	return wn, nil
}

// WordNetOf opens as much of WordNet as the hypernym graph of wnids needs:
// the whole database when it is open already, else only those synsets
// and their ancestors (a millisecond against Open's ~0.1 s, which every
// training run would pay before its first step for its hierarchical
// metrics).
// The last such part is kept: a command that checks a label set and then
// reads its synsets (lcl synsets, lcl eval) reads them once.
func (f *Factory) WordNetOf(wnids []string) (*wordnet.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wn != nil {
		return f.wn, nil
	}
	if f.wnPart != nil && !slices.ContainsFunc(wnids, func(id string) bool { return !f.wnPart.HasSynset(id) }) {
		return f.wnPart, nil
	}
	part, err := wordnet.OpenAncestors(f.WordNetDir, wnids)
	if err != nil {
		return nil, err
	}
	f.wnPart = part
	return part, nil
}

// LabelSet resolves a --synsets value (built-in name or file) and checks that
// every wnid it maps names a WordNet noun synset.
func (f *Factory) LabelSet(spec string) (*labels.Set, error) {
	if spec == "" {
		return nil, usagef("--synsets is required (a built-in set: %v, or a file of wnids)", labels.Names())
	}
	set, err := labels.Load(spec)
	if err != nil {
		return nil, err
	}
	hasWNID := false
	for _, c := range set.Classes {
		hasWNID = hasWNID || c.WNID != ""
	}
	if !hasWNID {
		return set, nil
	}
	// The set's synsets alone, read at their offsets, check it; a wnid
	// that names none is reported by Check against all of WordNet, with
	// the class and the line of the set's file.
	wn, err := f.WordNetOf(wnidsOf(set))
	if errors.Is(err, wordnet.ErrUnknownSynset) {
		wn, err = f.WordNet()
	}
	if err != nil {
		return nil, err
	}
	if err := set.Check(wn); err != nil {
		return nil, err
	}
	return set, nil
}

// wnidsOf is the wnids of set's classes that have one.
func wnidsOf(set *labels.Set) []string {
	var wnids []string
	for _, c := range set.Classes {
		if c.WNID != "" {
			wnids = append(wnids, c.WNID)
		}
	}
	return wnids
}

// Close releases what the factory opened.
func (f *Factory) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store != nil {
		err := f.store.Close()
		f.store = nil
		return err
	}
	return nil
}

// Progress returns a progress bar on stderr, drawn only on a terminal and
// without --quiet or --json; otherwise it discards its output.
func (f *Factory) Progress(total int64, desc string) *progressbar.ProgressBar {
	w := io.Discard
	if f.IO.ErrTTY && !f.Quiet && !f.JSON {
		w = f.IO.Err
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)
}

// Emit writes one JSON line {"message_type": typ, ...v} to stdout when --json
// is set; it reports whether it did, so callers print text otherwise.
func (f *Factory) Emit(typ string, v any) bool {
	if !f.JSON {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		m = map[string]json.RawMessage{"value": raw}
	}
	m["message_type"], _ = json.Marshal(typ)
	out, _ := json.Marshal(m)
	fmt.Fprintln(f.IO.Out, string(out))
	return true
}

// Logf prints an informational line on stderr unless --quiet.
func (f *Factory) Logf(format string, a ...any) {
	if !f.Quiet {
		fmt.Fprintln(f.IO.Err, bounded.Line(fmt.Sprintf(format, a...)))
	}
}

// similarityDeps are what the built-in similarity sources read: WordNet
// and the store, opened on first use.
func (f *Factory) similarityDeps() similarity.Deps {
	return similarity.Deps{
		WordNet: f.WordNet,
		Vectors: lazyVectors{f},
		Progress: func(total int64, desc string) similarity.Progress {
			return f.Progress(total, desc)
		},
	}
}

// lazyVectors opens the store only when the semantic source reads it.
type lazyVectors struct{ f *Factory }

func (l lazyVectors) GetVectors(ctx context.Context, labelSet, model string) (*simstore.Vectors, error) {
	s, err := l.f.Store()
	if err != nil {
		return nil, err
	}
	return s.GetVectors(ctx, labelSet, model)
}

func (l lazyVectors) List(ctx context.Context, kind string) ([]simstore.Entry, error) {
	s, err := l.f.Store()
	if err != nil {
		return nil, err
	}
	return s.List(ctx, kind)
}
