package data

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
)

// synthSet is a synthetic split for benchmarks and smoke tests: example i has
// label i mod classes and pixels drawn from a generator seeded by (split, i),
// already normalised (standard normal). With signal s > 0 each pixel also
// gets s times its class's pattern (±1 per pixel, from a generator seeded by
// the class), so the label can be learnt: a check that training on a device
// learns, not only that it runs. It reads no files.
type synthSet struct {
	n, classes, c, h, w int
	split               uint64
	signal              float64
}

// openSynthetic parses "synthetic[?n=N&test=N&classes=K&shape=C,H,W&signal=S]".
// Defaults: 1024 training and 256 test examples, 10 classes, 3×224×224,
// signal 0 (noise alone: the label cannot be learnt).
func openSynthetic(query string) (train, test Dataset, err error) {
	n, nt, k := 1024, 256, 10
	signal := 0.0
	shape := []int{3, 224, 224}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, nil, fmt.Errorf("data: synthetic: %w", err)
	}
	for key, vals := range q {
		v := vals[len(vals)-1]
		switch key {
		case "n":
			n, err = strconv.Atoi(v)
		case "test":
			nt, err = strconv.Atoi(v)
		case "classes":
			k, err = strconv.Atoi(v)
		case "shape":
			shape = shape[:0]
			for _, f := range strings.Split(v, ",") {
				var d int
				if d, err = strconv.Atoi(f); err != nil {
					break
				}
				shape = append(shape, d)
			}
			if err == nil && len(shape) != 3 {
				err = fmt.Errorf("want C,H,W")
			}
		case "signal":
			signal, err = strconv.ParseFloat(v, 64)
			if err == nil && !(signal >= 0 && signal <= 100) {
				err = fmt.Errorf("want a number from 0 to 100")
			}
		default:
			err = fmt.Errorf("unknown key (want n, test, classes, shape, signal)")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("data: synthetic: %s=%s: %w", key, v, err)
		}
	}
	if n < 1 || nt < 1 || k < 1 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 {
		return nil, nil, fmt.Errorf("data: synthetic: n=%d test=%d classes=%d shape=%v: want all positive", n, nt, k, shape)
	}
	// Bounds before anything is sized by them: the trainer allocates per
	// example (indices, labels) and per class (C×C targets).
	switch px, ok := bounded.Product(shape...); {
	case n > MaxExamples || nt > MaxExamples:
		return nil, nil, fmt.Errorf("data: synthetic: n=%d test=%d: want at most %d examples per split", n, nt, MaxExamples)
	case k > MaxClasses:
		return nil, nil, fmt.Errorf("data: synthetic: classes=%d: want at most %d", k, MaxClasses)
	case !ok || px > 3*MaxImagePixels:
		return nil, nil, fmt.Errorf("data: synthetic: shape=%v: want at most %d values per example", shape, 3*MaxImagePixels)
	}
	return &synthSet{n: n, classes: k, c: shape[0], h: shape[1], w: shape[2], split: 1, signal: signal},
		&synthSet{n: nt, classes: k, c: shape[0], h: shape[1], w: shape[2], split: 2, signal: signal}, nil
}

func (s *synthSet) Len() int             { return s.n }
func (s *synthSet) NumClasses() int      { return s.classes }
func (s *synthSet) Shape() (c, h, w int) { return s.c, s.h, s.w }
func (s *synthSet) Label(i int) int      { return i % s.classes }
func (s *synthSet) Classes() []string    { return numbered(s.classes) }
func (s *synthSet) Skipped() int         { return 0 }

func (s *synthSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	if i < 0 || i >= s.n || len(dst) != s.c*s.h*s.w {
		return &ExampleError{File: "(synthetic)", Index: i, Err: fmt.Errorf("index or destination size out of range")}
	}
	g := rand.New(rand.NewPCG(s.split, uint64(i)))
	for j := range dst {
		dst[j] = float32(g.NormFloat64())
	}
	if s.signal > 0 {
		// Split 3's generator, seeded by the class: the same pattern in both splits.
		p := rand.New(rand.NewPCG(3, uint64(s.Label(i))))
		v := float32(s.signal)
		for j := range dst {
			if p.Uint64()&1 == 0 {
				dst[j] += v
			} else {
				dst[j] -= v
			}
		}
	}
	return nil
}
