package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/klauspost/compress/gzip"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Fashion-MNIST class names, in label order.
var fashionClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// idxSet is an IDX split (MNIST, Fashion-MNIST) held in memory: 60,000
// Fashion-MNIST images are 47 MB, and gzip cannot be read at random.
type idxSet struct {
	file    string // image file, for errors
	h, w    int
	pixels  []byte  // n*h*w, row-major
	labels  []uint8 // per raw example
	keep    []int32 // dataset index → raw index when examples were skipped; nil = identity
	classes []string
	opt     *Options
	skipped int
}

func openIDX(sp Spec) (train, test Dataset, err error) {
	classes := slices.Clone(fashionClasses)
	if sp.Kind == "mnist" {
		classes = make([]string, 10)
		for i := range classes {
			classes[i] = strconv.Itoa(i)
		}
	}
	opt := sp.Options
	var sets [2]*idxSet
	for k, prefix := range []string{"train", "t10k"} {
		img, err := findIDX(sp.Dir, prefix+"-images", "idx3")
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
		}
		lab, err := findIDX(sp.Dir, prefix+"-labels", "idx1")
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
		}
		s, err := readIDXSplit(img, lab, classes, &opt)
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err)
		}
		sets[k] = s
	}
	return sets[0], sets[1], nil
}

// findIDX finds e.g. train-images-idx3-ubyte[.gz] or train-images.idx3-ubyte[.gz].
func findIDX(dir, stem, kind string) (string, error) {
	var tried []string
	for _, sep := range []string{"-", "."} {
		for _, ext := range []string{".gz", ""} {
			p := filepath.Join(dir, stem+sep+kind+"-ubyte"+ext)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			tried = append(tried, filepath.Base(p))
		}
	}
	return "", fmt.Errorf("%s: no %s file (looked for %v)", dir, stem, tried)
}

// readIDX reads an unsigned-byte IDX file, gzip-compressed or raw, and returns
// its dimensions and as many bytes of data as the file holds.
func readIDX(path string, wantDims int) (dims []int, body []byte, want int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	// What the file can hold: its size, or for gzip its size times
	// DEFLATE's largest expansion.
	var holds int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		holds = st.Size()
	}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		holds *= maxDeflateRatio
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, nil, 0, fmt.Errorf("%s: reading IDX header: %w", path, err)
	}
	if hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || int(hdr[3]) != wantDims {
		return nil, nil, 0, fmt.Errorf("%s: IDX magic % x: want 00 00 08 %02x (unsigned bytes, %d dimensions)", path, hdr, wantDims, wantDims)
	}
	dims = make([]int, wantDims)
	for i := range dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: reading IDX dimension %d: %w", path, i, err)
		}
		dims[i] = int(d)
	}
	want, ok := bounded.Product(dims...)
	if !ok || want > MaxIDXBytes {
		return nil, nil, 0, fmt.Errorf("%s: IDX dimensions %v make %s of data, more than the %s limit", path, dims, sizeOf(dims), bounded.Bytes(MaxIDXBytes))
	}
	// Trust the header's size only as far as the file can hold it: beyond
	// that the buffer grows with the data, and decompression stops at the
	// size the header declares, so neither a corrupt header nor a gzip bomb
	// can make us allocate more than the data that is really there (or, for
	// gzip, 1032 times the file). Allocating at once saves the growing
	// read's copies (47 MB twice for Fashion-MNIST's training images).
	if int64(want) <= holds {
		body = make([]byte, want)
		var k int
		k, err = io.ReadFull(r, body)
		body = body[:k]
	} else {
		body, err = bounded.ReadFull(r, int64(want))
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return dims, body, want, nil
}

// maxDeflateRatio is the most DEFLATE can expand its input: RFC 1951's
// longest match, 258 bytes, from a code of two bits at the least.
const maxDeflateRatio = 1032

// MaxIDXBytes bounds the data an IDX header may declare (1 GiB: 1.3 million
// 28×28 images, twice EMNIST's largest split), so a gzip-compressed IDX
// file cannot expand past it.
const MaxIDXBytes = 1 << 30

// sizeOf spells the product of dims in bytes, even when it overflows.
func sizeOf(dims []int) string {
	f := 1.0
	for _, d := range dims {
		f *= float64(d)
	}
	if f < 1<<62 {
		return bounded.Bytes(int64(f))
	}
	return fmt.Sprintf("%.3g bytes", f)
}

func readIDXSplit(imgPath, labPath string, classes []string, opt *Options) (*idxSet, error) {
	warn := newWarner(opt.Warn)
	dims, pixels, _, err := readIDX(imgPath, 3)
	if err != nil {
		return nil, err
	}
	n, h, w := dims[0], dims[1], dims[2]
	if hw, ok := bounded.Product(h, w); !ok || hw == 0 || hw > MaxIDXBytes {
		return nil, fmt.Errorf("%s: IDX image size %dx%d", imgPath, h, w)
	}
	s := &idxSet{file: imgPath, h: h, w: w, classes: classes, opt: opt}
	// Complete examples only; the rest of a truncated file is bad.
	if got := len(pixels) / (h * w); got < n {
		e := &ExampleError{File: imgPath, Index: got, Err: fmt.Errorf("truncated: header says %d examples, file holds %d complete ones", n, got)}
		if !opt.SkipBad {
			return nil, e
		}
		warn.warn(e)
		s.skipped += n - got
		n = got
	}
	s.pixels = pixels[:n*h*w]
	ldims, labels, _, err := readIDX(labPath, 1)
	if err != nil {
		return nil, err
	}
	if len(labels) < ldims[0] {
		e := &ExampleError{File: labPath, Index: len(labels), Err: fmt.Errorf("truncated: header says %d labels, file holds %d", ldims[0], len(labels))}
		if !opt.SkipBad {
			return nil, e
		}
		warn.warn(e)
	}
	if ldims[0] != dims[0] {
		return nil, fmt.Errorf("%s has %d labels but %s has %d images", labPath, ldims[0], imgPath, dims[0])
	}
	if len(labels) < n {
		s.skipped += n - len(labels)
		n = len(labels)
		s.pixels = s.pixels[:n*h*w]
	}
	s.labels = labels[:n]
	for i, l := range s.labels {
		if int(l) < len(classes) {
			if s.keep != nil {
				s.keep = append(s.keep, int32(i))
			}
			continue
		}
		e := &ExampleError{File: labPath, Index: i, Err: fmt.Errorf("label %d out of range 0..%d", l, len(classes)-1)}
		if !opt.SkipBad {
			return nil, e
		}
		warn.warn(e)
		s.skipped++
		if s.keep == nil {
			s.keep = make([]int32, i, n)
			for j := range s.keep {
				s.keep[j] = int32(j)
			}
		}
	}
	return s, nil
}

func (s *idxSet) raw(i int) int {
	if s.keep != nil {
		return int(s.keep[i])
	}
	return i
}

func (s *idxSet) Len() int {
	if s.keep != nil {
		return len(s.keep)
	}
	return len(s.labels)
}
func (s *idxSet) NumClasses() int      { return len(s.classes) }
func (s *idxSet) Shape() (c, h, w int) { return 1, s.h, s.w }
func (s *idxSet) Label(i int) int      { return int(s.labels[s.raw(i)]) }
func (s *idxSet) Classes() []string    { return s.classes }
func (s *idxSet) Skipped() int         { return s.skipped }

func (s *idxSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	return s.decode(i, dst, nil, train, rng)
}

// DecodeU8 is Decode writing pixel bytes (see U8Decoder).
func (s *idxSet) DecodeU8(i int, dst []uint8, train bool, rng *rand.Rand) error {
	return s.decode(i, nil, dst, train, rng)
}

// Normalization is the per-channel mean and std Decode applies.
func (s *idxSet) Normalization() (mean, std []float32) { return s.opt.Mean, s.opt.Std }

func (s *idxSet) decode(i int, dst []float32, dst8 []uint8, train bool, rng *rand.Rand) error {
	if i < 0 || i >= s.Len() {
		return &ExampleError{File: s.file, Index: i, Err: fmt.Errorf("index out of range 0..%d", s.Len()-1)}
	}
	r := s.raw(i)
	n := s.h * s.w
	return smallTransform(s.pixels[r*n:(r+1)*n], 1, s.h, s.w, dst, dst8, s.opt, train, rng)
}
