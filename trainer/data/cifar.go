package data

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CIFAR-10 class names, in label order (as in batches.meta.txt).
var cifar10Classes = []string{"airplane", "automobile", "bird", "cat", "deer",
	"dog", "frog", "horse", "ship", "truck"}

const cifarPixels = 3 * 32 * 32

// cifarSet is a CIFAR split in the binary release format: records of label
// byte(s) then 3072 pixel bytes (1024 red, 1024 green, 1024 blue, row-major).
// Labels are read when opening; pixels are read per example with ReadAt, so
// the files stay open for the life of the process.
type cifarSet struct {
	files   []cifarFile
	rec     int // record size: label bytes + 3072
	labels  []uint8
	where   []cifarLoc // per example
	classes []string
	opt     *Options
	skipped int
	bufs    sync.Pool
}

type cifarFile struct {
	f    *os.File
	name string
}

type cifarLoc struct {
	file int32
	rec  int32
}

func openCIFAR(sp Spec) (train, test Dataset, err error) {
	opt := sp.Options
	dir := sp.Dir
	var trainFiles, testFiles []string
	labelBytes, labelAt := 1, 0
	var classes []string
	if sp.Kind == "cifar10" {
		dir = cifarDir(dir, "cifar-10-batches-bin", "data_batch_1.bin")
		for i := 1; i <= 5; i++ {
			trainFiles = append(trainFiles, filepath.Join(dir, "data_batch_"+strconv.Itoa(i)+".bin"))
		}
		testFiles = []string{filepath.Join(dir, "test_batch.bin")}
		classes = classNames(filepath.Join(dir, "batches.meta.txt"), slices.Clone(cifar10Classes))
	} else {
		dir = cifarDir(dir, "cifar-100-binary", "train.bin")
		trainFiles = []string{filepath.Join(dir, "train.bin")}
		testFiles = []string{filepath.Join(dir, "test.bin")}
		labelBytes = 2
		if opt.Labels == "fine" {
			labelAt = 1
			classes = classNames(filepath.Join(dir, "fine_label_names.txt"), numbered(100))
		} else {
			classes = classNames(filepath.Join(dir, "coarse_label_names.txt"), numbered(20))
		}
	}
	tr, err := readCIFAR(trainFiles, labelBytes, labelAt, classes, &opt)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
	}
	te, err := readCIFAR(testFiles, labelBytes, labelAt, classes, &opt)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
	}
	return tr, te, nil
}

// cifarDir accepts both the folder holding the .bin files and its parent
// (where the official archive unpacks to sub).
func cifarDir(dir, sub, probe string) string {
	if _, err := os.Stat(filepath.Join(dir, probe)); err != nil {
		if _, err := os.Stat(filepath.Join(dir, sub, probe)); err == nil {
			return filepath.Join(dir, sub)
		}
	}
	return dir
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// classNames reads one name per non-empty line, or returns def when the file
// is missing or has a different number of names.
func classNames(path string, def []string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	if len(names) != len(def) {
		return def
	}
	return names
}

func readCIFAR(paths []string, labelBytes, labelAt int, classes []string, opt *Options) (_ *cifarSet, err error) {
	s := &cifarSet{rec: labelBytes + cifarPixels, classes: classes, opt: opt}
	s.bufs.New = func() any { b := make([]byte, cifarPixels); return &b }
	warn := newWarner(opt.Warn)
	defer func() {
		if err != nil {
			for _, f := range s.files {
				f.f.Close()
			}
		}
	}()
	index := 0 // split index of the next record, counting bad ones
	for fi, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, cifarFile{f: f, name: p})
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if err := s.scan(fi, p, bufio.NewReaderSize(f, 1<<20), st.Size(), labelAt, warn, &index); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// scan reads the labels of batch file fi (name, size bytes, read from r):
// whole records are examples (a label out of range is a bad one), a partial
// last record is a truncation. index counts the split's records, bad ones
// included.
func (s *cifarSet) scan(fi int, name string, r io.Reader, size int64, labelAt int, warn *warner, index *int) error {
	n := int(size / int64(s.rec))
	rec := make([]byte, s.rec)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(r, rec); err != nil {
			return &ExampleError{File: name, Index: *index, Err: err}
		}
		l := rec[labelAt]
		if int(l) >= len(s.classes) {
			e := &ExampleError{File: name, Index: *index, Err: fmt.Errorf("record %d: label %d out of range 0..%d", i, l, len(s.classes)-1)}
			if !s.opt.SkipBad {
				return e
			}
			warn.warn(e)
			s.skipped++
		} else {
			s.labels = append(s.labels, l)
			s.where = append(s.where, cifarLoc{file: int32(fi), rec: int32(i)})
		}
		*index++
	}
	if extra := size % int64(s.rec); extra != 0 {
		e := &ExampleError{File: name, Index: *index, Err: fmt.Errorf("truncated: %d bytes is %d whole %d-byte records and %d bytes of record %d", size, n, s.rec, extra, n)}
		if !s.opt.SkipBad {
			return e
		}
		warn.warn(e)
		s.skipped++
		*index++
	}
	return nil
}

func (s *cifarSet) Len() int             { return len(s.labels) }
func (s *cifarSet) NumClasses() int      { return len(s.classes) }
func (s *cifarSet) Shape() (c, h, w int) { return 3, 32, 32 }
func (s *cifarSet) Label(i int) int      { return int(s.labels[i]) }
func (s *cifarSet) Classes() []string    { return s.classes }
func (s *cifarSet) Skipped() int         { return s.skipped }

func (s *cifarSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	return s.decode(i, dst, nil, train, rng)
}

// DecodeU8 is Decode writing pixel bytes (see U8Decoder).
func (s *cifarSet) DecodeU8(i int, dst []uint8, train bool, rng *rand.Rand) error {
	return s.decode(i, nil, dst, train, rng)
}

// Normalization is the per-channel mean and std Decode applies.
func (s *cifarSet) Normalization() (mean, std []float32) { return s.opt.Mean, s.opt.Std }

func (s *cifarSet) decode(i int, dst []float32, dst8 []uint8, train bool, rng *rand.Rand) error {
	if i < 0 || i >= len(s.where) {
		return &ExampleError{File: s.files[0].name, Index: i, Err: fmt.Errorf("index out of range 0..%d", len(s.where)-1)}
	}
	loc := s.where[i]
	f := s.files[loc.file]
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	off := int64(loc.rec)*int64(s.rec) + int64(s.rec-cifarPixels)
	if _, err := f.f.ReadAt(*bp, off); err != nil {
		return &ExampleError{File: f.name, Index: i, Err: err}
	}
	return smallTransform(*bp, 3, 32, 32, dst, dst8, s.opt, train, rng)
}
