// Package wordnet reads the noun part of WordNet 3.0 (data.noun, index.noun)
// and computes what lcl needs of it: synsets by wnid, lemma lookup in sense
// order, depths and Wu-Palmer similarity as nltk defines them.
package wordnet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/lcl-project/lcl/internal/bounded"
)

// DefaultDir is where Debian's wordnet-base installs WordNet 3.0.
const DefaultDir = "/usr/share/wordnet"

// ErrUnknownSynset is returned (wrapped) when a wnid names no noun synset.
var ErrUnknownSynset = errors.New("unknown synset")

// Synset is one WordNet noun synset. Pointers are held as wnids so a Synset
// can be copied and compared without the database.
type Synset struct {
	ID       string // wnid, "n" + 8-digit byte offset into data.noun
	Offset   int64
	LexFile  int      // lexicographer file number (03 = noun.Tops, 05 = noun.animal, ...)
	Lemmas   []string // words as stored, with underscores ("kit_fox")
	Gloss    string   // the definition, without examples
	Examples []string // the quoted usage examples that follow the definition

	Hypernyms         []string // "@"
	InstanceHypernyms []string // "@i"
	Hyponyms          []string // "~"
	InstanceHyponyms  []string // "~i"
}

// Name is the synset's first lemma with spaces for underscores.
func (s *Synset) Name() string {
	if len(s.Lemmas) == 0 {
		return s.ID
	}
	return strings.ReplaceAll(s.Lemmas[0], "_", " ")
}

// Parents returns hypernyms followed by instance hypernyms: the edges that
// WordNet similarity measures (and nltk) walk towards the root.
func (s *Synset) Parents() []string {
	if len(s.InstanceHypernyms) == 0 {
		return s.Hypernyms
	}
	out := make([]string, 0, len(s.Hypernyms)+len(s.InstanceHypernyms))
	return append(append(out, s.Hypernyms...), s.InstanceHypernyms...)
}

// DB is a loaded WordNet 3.0 noun database. It is safe for concurrent
// use once opened.
type DB struct {
	dir     string
	synsets map[string]*Synset
	order   []*Synset // file order

	indexOnce sync.Once
	index     map[string][]string // lemma (lower case, underscores) → wnids in sense order
	indexErr  error

	depthMu  sync.Mutex
	minDepth map[string]int
	maxDepth map[string]int
}

// Dir returns dir if set, else $WNHOME (or its dict/ subfolder), else
// DefaultDir.
func Dir(dir string) string {
	if dir != "" {
		return dir
	}
	if home := os.Getenv("WNHOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, "dict", "data.noun")); err == nil {
			return filepath.Join(home, "dict")
		}
		return home
	}
	return DefaultDir
}

// Open reads data.noun from dir (see Dir for the default).
// index.noun is read lazily on the first lemma lookup.
func Open(dir string) (*DB, error) {
	dir = Dir(dir)
	path := filepath.Join(dir, "data.noun")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, dataNounError(path, err)
	}
	wn := &DB{dir: dir, synsets: make(map[string]*Synset, 82115), order: make([]*Synset, 0, 82115)}
	var offset int64
	lineNo := 0
	for len(raw) > 0 {
		lineNo++
		end := bytes.IndexByte(raw, '\n')
		var line []byte
		if end < 0 {
			line, raw = raw, nil
		} else {
			line, raw = raw[:end], raw[end+1:]
		}
		start := offset
		offset += int64(len(line)) + 1
		if len(line) == 0 || line[0] == ' ' { // license header
			continue
		}
		s, err := parseDataLine(string(line))
		if err != nil {
			return nil, fmt.Errorf("wordnet: %s:%d: %w", path, lineNo, err)
		}
		if s.Offset != start {
			return nil, fmt.Errorf("wordnet: %s:%d: synset offset %08d does not match its byte offset %d (is this WordNet 3.0 data.noun?)", path, lineNo, s.Offset, start)
		}
		wn.synsets[s.ID] = s
		wn.order = append(wn.order, s)
	}
	if len(wn.order) == 0 {
		return nil, fmt.Errorf("wordnet: %s holds no synsets", path)
	}
	return wn, nil
}

// dataNounError is the error for a data.noun that cannot be read, with the
// install hint when it is missing.
func dataNounError(path string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("wordnet: %s not found: install Debian's wordnet-base (make deps) or point --wordnet / $WNHOME at a WordNet 3.0 dict folder", path)
	}
	return fmt.Errorf("wordnet: %w", err)
}

// parseDataLine parses one data.noun line:
// offset lex_filenum ss_type w_cnt word lex_id ... p_cnt ptr... | gloss
func parseDataLine(line string) (*Synset, error) {
	head, gloss, ok := strings.Cut(line, " | ")
	if !ok {
		head, gloss = strings.TrimSuffix(line, " |"), ""
	}
	f := strings.Fields(head)
	if len(f) < 6 {
		return nil, fmt.Errorf("expected 'offset lex_filenum ss_type w_cnt words p_cnt', got %d fields", len(f))
	}
	off, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || len(f[0]) != 8 {
		return nil, fmt.Errorf("synset offset %q is not 8 decimal digits", f[0])
	}
	lex, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, fmt.Errorf("lex_filenum %q is not a number", f[1])
	}
	if f[2] != "n" {
		return nil, fmt.Errorf("ss_type %q: expected n (noun)", f[2])
	}
	wcnt, err := strconv.ParseInt(f[3], 16, 32)
	if err != nil || wcnt < 1 {
		return nil, fmt.Errorf("w_cnt %q is not a positive hex number", f[3])
	}
	i := 4
	if len(f) < i+2*int(wcnt)+1 {
		return nil, fmt.Errorf("w_cnt %d but only %d fields follow", wcnt, len(f)-i)
	}
	s := &Synset{ID: fmt.Sprintf("n%08d", off), Offset: off, LexFile: lex, Lemmas: make([]string, 0, wcnt)}
	for w := 0; w < int(wcnt); w++ {
		s.Lemmas = append(s.Lemmas, f[i])
		i += 2
	}
	pcnt, err := strconv.Atoi(f[i])
	if err != nil || pcnt < 0 {
		return nil, fmt.Errorf("p_cnt %q is not a count", f[i])
	}
	i++
	// Compare by division: 4*pcnt overflows for a count of 2⁶².
	if pcnt > (len(f)-i)/4 {
		return nil, fmt.Errorf("p_cnt %d but only %d fields follow (4 per pointer)", pcnt, len(f)-i)
	}
	for p := 0; p < pcnt; p++ {
		sym, target, pos := f[i], f[i+1], f[i+2]
		i += 4
		if pos != "n" {
			continue
		}
		id := "n" + target
		switch sym {
		case "@":
			s.Hypernyms = append(s.Hypernyms, id)
		case "@i":
			s.InstanceHypernyms = append(s.InstanceHypernyms, id)
		case "~":
			s.Hyponyms = append(s.Hyponyms, id)
		case "~i":
			s.InstanceHyponyms = append(s.InstanceHyponyms, id)
		}
	}
	s.Gloss, s.Examples = splitGloss(strings.TrimSpace(gloss))
	return s, nil
}

// splitGloss separates the definition from the quoted examples that follow
// it ("definition; \"example one\"; \"example two\"").
func splitGloss(g string) (string, []string) {
	i := strings.Index(g, "; \"")
	if i < 0 {
		if strings.HasPrefix(g, "\"") {
			i = 0
		} else {
			return g, nil
		}
	}
	def := strings.TrimSpace(g[:i])
	var ex []string
	for _, part := range strings.Split(g[i:], "\"") {
		part = strings.TrimSpace(strings.Trim(strings.TrimSpace(part), ";"))
		if part != "" && part != ";" {
			ex = append(ex, part)
		}
	}
	return def, ex
}

// Dir is the folder the database was read from.
func (wn *DB) Dir() string { return wn.dir }

// Len is the number of noun synsets.
func (wn *DB) Len() int { return len(wn.order) }

// Nouns returns every noun synset in data.noun order. The slice is shared:
// do not modify it.
func (wn *DB) Nouns() []*Synset { return wn.order }

// Synset returns the noun synset with the given wnid ("n02119789").
func (wn *DB) Synset(wnid string) (*Synset, error) {
	if s, ok := wn.synsets[wnid]; ok {
		return s, nil
	}
	if !validWNID(wnid) {
		return nil, fmt.Errorf("%q is not a noun wnid (expected n followed by 8 digits): %w", wnid, ErrUnknownSynset)
	}
	return nil, fmt.Errorf("%s: no noun synset at offset %s of %s: %w", wnid, wnid[1:], filepath.Join(wn.dir, "data.noun"), ErrUnknownSynset)
}

func validWNID(s string) bool {
	if len(s) != 9 || s[0] != 'n' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Lookup returns the noun synsets of a lemma in WordNet's sense order
// (most frequent first). Case and spaces/underscores are ignored.
func (wn *DB) Lookup(lemma string) ([]*Synset, error) {
	wn.indexOnce.Do(func() { wn.index, wn.indexErr = readIndex(filepath.Join(wn.dir, "index.noun")) })
	if wn.indexErr != nil {
		return nil, wn.indexErr
	}
	key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(lemma), " ", "_"))
	ids := wn.index[key]
	out := make([]*Synset, 0, len(ids))
	for _, id := range ids {
		s, err := wn.Synset(id)
		if err != nil {
			return nil, fmt.Errorf("index.noun entry %q: %w", key, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// readIndex parses index.noun:
// lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
func readIndex(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordnet: %w", err)
	}
	defer f.Close()
	idx := make(map[string][]string, 120000)
	sc := bounded.NewScanner(f, 1<<20)
	for sc.Scan() {
		lineNo := sc.Line()
		line := sc.Text()
		if line == "" || line[0] == ' ' {
			continue
		}
		lemma, ids, err := parseIndexLine(line)
		if err != nil {
			return nil, fmt.Errorf("wordnet: %s:%d: %w", path, lineNo, err)
		}
		idx[lemma] = ids
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("wordnet: %s: %w", path, err)
	}
	return idx, nil
}

// parseIndexLine parses one index.noun line into its lemma and wnids.
func parseIndexLine(line string) (string, []string, error) {
	fl := strings.Fields(line)
	if len(fl) < 6 {
		return "", nil, fmt.Errorf("expected at least 6 fields, got %d", len(fl))
	}
	n, err1 := strconv.Atoi(fl[2])
	p, err2 := strconv.Atoi(fl[3])
	// Bound both counts by the fields there are before adding them, so
	// neither a negative count nor an overflowing sum gets through.
	if err1 != nil || err2 != nil || n < 0 || p < 0 || n > len(fl) || p > len(fl) || len(fl) != 4+p+2+n {
		return "", nil, fmt.Errorf("synset_cnt %q and p_cnt %q do not match the %d fields", fl[2], fl[3], len(fl))
	}
	ids := make([]string, n)
	for i, off := range fl[4+p+2:] {
		if len(off) != 8 || strings.Trim(off, "0123456789") != "" {
			return "", nil, fmt.Errorf("synset offset %q is not 8 decimal digits", off)
		}
		ids[i] = "n" + off
	}
	return fl[0], ids, nil
}

// HasSynset reports whether wnid names a noun synset.
func (wn *DB) HasSynset(wnid string) bool {
	_, ok := wn.synsets[wnid]
	return ok
}

// New builds an in-memory database from synsets (tests, tools); pointers to
// synsets not given are kept but lead nowhere.
func New(synsets ...*Synset) *DB {
	wn := &DB{synsets: make(map[string]*Synset, len(synsets))}
	for _, s := range synsets {
		wn.synsets[s.ID] = s
		wn.order = append(wn.order, s)
	}
	return wn
}

// Get returns the synset of wnid, or false when there is none (Synset says why).
func (wn *DB) Get(wnid string) (*Synset, bool) {
	s, ok := wn.synsets[wnid]
	return s, ok
}

// FirstLemma returns the first lemma of wnid's synset as stored
// ("kit_fox"), or false when there is no such synset. Label sets that ship
// only wnids take their class names from it (labels.SynsetNamer).
func (wn *DB) FirstLemma(wnid string) (string, bool) {
	s, ok := wn.synsets[wnid]
	if !ok || len(s.Lemmas) == 0 {
		return "", false
	}
	return s.Lemmas[0], true
}
