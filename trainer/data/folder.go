package data

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // registers JPEG for image.Decode
	_ "image/png"  // registers PNG for image.Decode
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lcl-project/lcl/internal/bounded"
)

// imageSet is a split of image files (folder, CUB, NABirds) decoded on demand.
type imageSet struct {
	paths   []string
	labels  []int32
	classes []string
	opt     *Options
	skipped int
	scratch sync.Pool // *decodeScratch
}

// decodeScratch is one decoding goroutine's reusable memory: the file's
// bytes and the resampler's planes.
type decodeScratch struct {
	file []byte
	rs   resampler
}

func newImageSet(classes []string, opt *Options) *imageSet {
	s := &imageSet{classes: classes, opt: opt}
	s.scratch.New = func() any { return new(decodeScratch) }
	return s
}

func (s *imageSet) Len() int             { return len(s.paths) }
func (s *imageSet) NumClasses() int      { return len(s.classes) }
func (s *imageSet) Shape() (c, h, w int) { return 3, s.opt.Size, s.opt.Size }
func (s *imageSet) Label(i int) int      { return int(s.labels[i]) }
func (s *imageSet) Classes() []string    { return s.classes }
func (s *imageSet) Skipped() int         { return s.skipped }

// Path is the file of example i.
func (s *imageSet) Path(i int) string { return s.paths[i] }

func (s *imageSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	return s.decode(i, dst, nil, train, rng)
}

// DecodeU8 is Decode writing pixel bytes (see U8Decoder).
func (s *imageSet) DecodeU8(i int, dst []uint8, train bool, rng *rand.Rand) error {
	return s.decode(i, nil, dst, train, rng)
}

// Normalization is the per-channel mean and std Decode applies.
func (s *imageSet) Normalization() (mean, std []float32) { return s.opt.Mean, s.opt.Std }

func (s *imageSet) decode(i int, dst []float32, dst8 []uint8, train bool, rng *rand.Rand) error {
	if i < 0 || i >= len(s.paths) {
		return &ExampleError{File: "(image list)", Index: i, Err: fmt.Errorf("index out of range 0..%d", len(s.paths)-1)}
	}
	sc := s.scratch.Get().(*decodeScratch)
	defer s.scratch.Put(sc)
	b, err := readFileInto(s.paths[i], sc.file)
	if err != nil {
		return &ExampleError{File: s.paths[i], Index: i, Err: err}
	}
	sc.file = b
	rs := &sc.rs
	// One set of limits for every decoder, checked on the header first:
	// the size, and a progressive JPEG's coefficient memory.
	jpeg := len(b) > 2 && b[0] == 0xff && b[1] == 0xd8
	if jpeg {
		if err := checkJPEGHeader(b); err != nil {
			return &ExampleError{File: s.paths[i], Index: i, Err: err}
		}
	}
	// libjpeg-turbo's path counts scans in its progress monitor.
	if ok, err := decodeJPEGFast(b, dst, dst8, rs, s.opt, train, rng); ok || err != nil {
		if err != nil {
			return &ExampleError{File: s.paths[i], Index: i, Err: err}
		}
		return nil
	}
	// The limits first (header reads, a pass over a JPEG's markers), then
	// Go's decoders.
	if jpeg {
		if err := checkJPEGScans(b); err != nil {
			return &ExampleError{File: s.paths[i], Index: i, Err: err}
		}
	}
	if err := checkImageSize(b); err != nil {
		return &ExampleError{File: s.paths[i], Index: i, Err: err}
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return &ExampleError{File: s.paths[i], Index: i, Err: fmt.Errorf("decoding image: %w", err)}
	}
	if err := imageTransform(img, dst, dst8, rs, s.opt, train, rng); err != nil {
		return &ExampleError{File: s.paths[i], Index: i, Err: err}
	}
	return nil
}

// isImage reports whether a file name has an image extension the package decodes.
func isImage(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		return true
	}
	return false
}

// isDir reports whether the entry e of dir is a folder or a symbolic link
// to one.
func isDir(dir string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// isRegular reports whether the entry e of dir is a regular file or a
// symbolic link to one (not a named pipe, a device or a socket).
func isRegular(dir string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.Type().IsRegular()
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.Mode().IsRegular()
}

// openFolder reads ROOT/<train>/<class>/*.{jpg,jpeg,png} and ROOT/<val>/<class>/….
func openFolder(sp Spec) (train, test Dataset, err error) {
	opt := sp.Options
	trainDir := filepath.Join(sp.Dir, opt.TrainDir)
	testDir := filepath.Join(sp.Dir, opt.TestDir)
	if _, err := os.Stat(testDir); errors.Is(err, fs.ErrNotExist) && opt.TestDir == "val" {
		if _, err := os.Stat(filepath.Join(sp.Dir, "test")); err == nil {
			testDir = filepath.Join(sp.Dir, "test")
		}
	}
	classes := opt.Classes
	if len(classes) == 0 {
		entries, err := os.ReadDir(trainDir)
		if err != nil {
			return nil, nil, fmt.Errorf("data: folder: %w", err)
		}
		for _, e := range entries {
			if isDir(trainDir, e) {
				classes = append(classes, e.Name())
			}
		}
		slices.Sort(classes)
		if len(classes) == 0 {
			return nil, nil, fmt.Errorf("data: folder: %s has no class folders", trainDir)
		}
	}
	index := make(map[string]int, len(classes))
	for k, c := range classes {
		if _, dup := index[c]; dup {
			return nil, nil, fmt.Errorf("data: folder: class %q listed twice", c)
		}
		index[c] = k
	}
	tr, err := readFolderSplit(trainDir, classes, index, &opt)
	if err != nil {
		return nil, nil, fmt.Errorf("data: folder: %w", err)
	}
	te, err := readFolderSplit(testDir, classes, index, &opt)
	if err != nil {
		return nil, nil, fmt.Errorf("data: folder: %w", err)
	}
	return tr, te, nil
}

func readFolderSplit(dir string, classes []string, index map[string]int, opt *Options) (*imageSet, error) {
	s := newImageSet(classes, opt)
	warn := newWarner(opt.Warn)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries { // ReadDir sorts by name, so the order is stable
		// A class folder may be a symbolic link (splits made of links, as
		// AwA2's often are): followed, one level, so no loop can form.
		if !isDir(dir, e) {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		files, err := os.ReadDir(sub)
		if err != nil {
			return nil, err
		}
		k, ok := index[e.Name()]
		for _, f := range files {
			if !isImage(f.Name()) || isDir(sub, f) {
				continue
			}
			var bad error
			switch {
			case !ok:
				bad = fmt.Errorf("class folder %q is not in the label set (%d classes)", e.Name(), len(classes))
			case !isRegular(sub, f):
				bad = fmt.Errorf("%w: only regular files (or links to them) are read", bounded.ErrNotRegular)
			}
			if bad != nil {
				err := &ExampleError{File: filepath.Join(sub, f.Name()), Index: len(s.paths) + s.skipped, Err: bad}
				if !opt.SkipBad {
					return nil, err
				}
				warn.warn(err)
				s.skipped++
				continue
			}
			s.paths = append(s.paths, filepath.Join(sub, f.Name()))
			s.labels = append(s.labels, int32(k))
		}
	}
	if len(s.paths) == 0 {
		return nil, fmt.Errorf("%s: no images (want %s/<class>/*.jpg|png)", dir, dir)
	}
	return s, nil
}

// openBirds reads CUB-200-2011 or NABirds through their list files:
// images.txt (<id> <path under images/>), image_class_labels.txt (<id>
// <class id>), train_test_split.txt (<id> <1 train | 0 test>) and, for names,
// classes.txt (<class id> <name>). The class ids that label images, sorted
// numerically, become labels 0..K-1 (CUB: 200, NABirds: 555 leaf classes).
func openBirds(sp Spec) (train, test Dataset, err error) {
	opt := sp.Options
	dir := sp.Dir
	for _, sub := range []string{"CUB_200_2011", "nabirds"} {
		if _, err := os.Stat(filepath.Join(dir, "images.txt")); err == nil {
			break
		}
		if _, err := os.Stat(filepath.Join(dir, sub, "images.txt")); err == nil {
			dir = filepath.Join(dir, sub)
		}
	}
	fail := func(err error) (Dataset, Dataset, error) { return nil, nil, fmt.Errorf("data: %s: %w", sp.Kind, err) }
	images, order, err := readPairs(filepath.Join(dir, "images.txt"))
	if err != nil {
		return fail(err)
	}
	labelList := filepath.Join(dir, "image_class_labels.txt")
	labelOf, _, err := readPairs(labelList)
	if err != nil {
		return fail(err)
	}
	splitList := filepath.Join(dir, "train_test_split.txt")
	split, _, err := readPairs(splitList)
	if err != nil {
		return fail(err)
	}
	names, _, err := readPairs(filepath.Join(dir, "classes.txt"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	classes, label := birdClasses(labelOf, names)
	if len(classes) == 0 {
		return fail(fmt.Errorf("%s: no usable class labels", labelList))
	}
	if len(opt.Classes) > 0 {
		return fail(fmt.Errorf("classes=: a label order applies to folder data sets only"))
	}
	tr, te := newImageSet(classes, &opt), newImageSet(classes, &opt)
	warn := newWarner(opt.Warn)
	for n, id := range order {
		var bad error
		lab, hasLab := labelOf[id]
		k, known := label[lab]
		isTrain := split[id]
		switch {
		case !hasLab:
			bad = &ExampleError{File: labelList, Index: n, Err: fmt.Errorf("image id %s has no label", id)}
		case !known:
			bad = &ExampleError{File: labelList, Index: n, Err: fmt.Errorf("image id %s: class %q out of range (not a class id in classes.txt)", id, lab)}
		case isTrain != "0" && isTrain != "1":
			bad = &ExampleError{File: splitList, Index: n, Err: fmt.Errorf("image id %s: split %q, want 1 (train) or 0 (test)", id, isTrain)}
		}
		if bad != nil {
			if !opt.SkipBad {
				return fail(bad)
			}
			warn.warn(bad)
			if isTrain == "0" {
				te.skipped++
			} else {
				tr.skipped++
			}
			continue
		}
		s := te
		if isTrain == "1" {
			s = tr
		}
		s.paths = append(s.paths, filepath.Join(dir, "images", filepath.FromSlash(images[id])))
		s.labels = append(s.labels, k)
	}
	if tr.Len() == 0 || te.Len() == 0 {
		return fail(fmt.Errorf("%s: %d training and %d test images: want both", splitList, tr.Len(), te.Len()))
	}
	return tr, te, nil
}

// birdClasses numbers the class ids that label images (and, when classes.txt
// was read, have a name there), sorted numerically, 0..K-1: the names (the
// id where classes.txt gives none) and each id's label.
func birdClasses(labelOf, names map[string]string) (classes []string, label map[string]int32) {
	used := map[int]bool{}
	for _, v := range labelOf {
		id, err := strconv.Atoi(v)
		if err == nil && (names == nil || names[v] != "") {
			used[id] = true
		}
	}
	ids := slices.Sorted(maps.Keys(used))
	classes = make([]string, len(ids))
	label = make(map[string]int32, len(ids))
	for k, id := range ids {
		key := strconv.Itoa(id)
		label[key] = int32(k)
		classes[k] = key
		if n := names[key]; n != "" {
			classes[k] = n
		}
	}
	return classes, label
}

// readPairs reads "<key> <value>" lines (the value may contain spaces) into a
// map and the keys in file order. Duplicate keys and lines without a value are
// errors naming the line.
func readPairs(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return parsePairs(f, path)
}

// parsePairs is readPairs of the file path's contents r.
func parsePairs(r io.Reader, path string) (map[string]string, []string, error) {
	m := map[string]string{}
	var order []string
	sc := bounded.NewScanner(r, 1<<20)
	for sc.Scan() {
		line := sc.Line()
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		k, v, ok := strings.Cut(t, " ")
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, nil, fmt.Errorf("%s:%d: want \"<id> <value>\", got %q", path, line, t)
		}
		if _, dup := m[k]; dup {
			return nil, nil, fmt.Errorf("%s:%d: id %s listed twice", path, line, k)
		}
		m[k] = v
		order = append(order, k)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, order, nil
}
