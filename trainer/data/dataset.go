package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Dataset is one split of a data set: a fixed number of labelled examples that
// decode to float32 tensors of one shape.
type Dataset interface {
	// Len is the number of examples.
	Len() int
	// NumClasses is the number of classes; labels are 0..NumClasses()-1.
	NumClasses() int
	// Shape is the shape of one decoded example (channels, height, width).
	Shape() (c, h, w int)
	// Label is the class of example i. It never reads image data.
	Label(i int) int
	// Classes names the classes in label order (folder names, WordNet ids,
	// CIFAR names, ...). Its length is NumClasses(); callers must not
	// modify it.
	Classes() []string
	// Decode writes example i, normalised, in CHW order into dst, which has
	// length c*h*w. With train set it applies the split's training
	// augmentation, drawing randomness only from rng (which must then be
	// non-nil); otherwise it applies the deterministic evaluation transform.
	// Decode is safe for concurrent use. Errors name the file and example.
	Decode(i int, dst []float32, train bool, rng *rand.Rand) error
	// Skipped counts examples dropped when the split was opened with
	// Options.SkipBad (truncated files, labels out of range, unlisted files).
	Skipped() int
}

// ExampleError reports a bad example: a truncated file, an undecodable image
// or a label out of range.
type ExampleError struct {
	File  string // the file holding the example (or the list naming it)
	Index int    // the example's index in its split (or its line in a list file, as noted in Err)
	Err   error
}

func (e *ExampleError) Error() string {
	return fmt.Sprintf("%s: example %d: %v", bounded.Quote(e.File), e.Index, e.Err)
}

func (e *ExampleError) Unwrap() error { return e.Err }

// warner reports skipped examples, at most maxWarnings times per split, so a
// damaged file does not flood the terminal; the count is always exact.
type warner struct {
	mu    sync.Mutex
	fn    func(string)
	n     int
	quiet bool
}

const maxWarnings = 10

func newWarner(fn func(string)) *warner {
	if fn == nil {
		fn = func(msg string) { fmt.Fprintln(os.Stderr, "lcl: warning:", bounded.Line(msg)) }
	}
	return &warner{fn: fn}
}

func (w *warner) warn(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	switch {
	case w.n <= maxWarnings:
		w.fn("skipping bad example: " + err.Error())
	case !w.quiet:
		w.quiet = true
		w.fn("more bad examples skipped; further warnings suppressed (see the skipped count)")
	}
}

func (w *warner) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
