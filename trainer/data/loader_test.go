package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// labelSet is an in-memory data set with chosen labels; example i decodes to
// the single value i (plus a random draw in training).
type labelSet struct {
	labels  []int
	classes int
}

func (f *labelSet) Len() int             { return len(f.labels) }
func (f *labelSet) NumClasses() int      { return f.classes }
func (f *labelSet) Shape() (c, h, w int) { return 1, 1, 1 }
func (f *labelSet) Label(i int) int      { return f.labels[i] }
func (f *labelSet) Classes() []string    { return numbered(f.classes) }
func (f *labelSet) Skipped() int         { return 0 }
func (f *labelSet) Decode(i int, dst []float32, train bool, rng *rand.Rand) error {
	dst[0] = float32(i)
	if train {
		dst[0] += float32(rng.Float64())
	}
	return nil
}

func TestFraction(t *testing.T) {
	// Class c has 10·(c+1) examples; class 3 has 1; class 4 has none.
	var labels []int
	for c, n := range []int{10, 20, 30, 1, 0, 7} {
		for range n {
			labels = append(labels, c)
		}
	}
	rev := slices.Clone(labels)
	slices.Reverse(rev)
	ds := &labelSet{labels: rev, classes: 6}
	tests := []struct {
		frac    float64
		want    []int // per class
		wantErr bool
	}{
		{frac: 1, want: []int{10, 20, 30, 1, 0, 7}},
		{frac: 0.5, want: []int{5, 10, 15, 1, 0, 4}}, // round(3.5) = 4
		{frac: 0.2, want: []int{2, 4, 6, 1, 0, 1}},
		{frac: 0.1, want: []int{1, 2, 3, 1, 0, 1}},
		{frac: 0.05, want: []int{1, 1, 2, 1, 0, 1}}, // round(0.5)=1, round(1.5)=2
		{frac: 0, wantErr: true},
		{frac: 1.5, wantErr: true},
		{frac: math.NaN(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.frac), func(t *testing.T) {
			idx, err := Fraction(ds, tt.frac, 7)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int, 6)
			for _, i := range idx {
				got[ds.Label(i)]++
			}
			if !slices.Equal(got, tt.want) || !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != len(idx) {
				t.Fatalf("per class %v, want %v (indices %v)", got, tt.want, idx)
			}
			again, _ := Fraction(ds, tt.frac, 7)
			if !slices.Equal(idx, again) {
				t.Fatal("same seed, different subset")
			}
			if tt.frac < 1 {
				other, _ := Fraction(ds, tt.frac, 8)
				if slices.Equal(idx, other) && tt.frac >= 0.2 {
					t.Fatal("seeds 7 and 8 gave the same subset")
				}
			}
		})
	}
	bad := &labelSet{labels: []int{0, 3}, classes: 2}
	if _, err := Fraction(bad, 0.5, 1); err == nil || !strings.Contains(err.Error(), "example 1: label 3 out of range") {
		t.Fatalf("error %v", err)
	}
}

// collect runs a loader to the end and returns its batches' contents.
func collect(t *testing.T, ds Dataset, cfg LoaderConfig) (xs [][]float32, ys [][]int64, idx [][]int, err error) {
	t.Helper()
	l, err := NewLoader(context.Background(), ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for {
		b, err := l.Next()
		if err == io.EOF {
			return xs, ys, idx, nil
		}
		if err != nil {
			return xs, ys, idx, err
		}
		if len(b.X) != b.N*len(b.X)/max(b.N, 1) || len(b.Y) != b.N || len(b.Index) != b.N {
			t.Fatalf("batch of %d with %d/%d/%d values", b.N, len(b.X), len(b.Y), len(b.Index))
		}
		xs, ys, idx = append(xs, slices.Clone(b.X)), append(ys, slices.Clone(b.Y)), append(idx, slices.Clone(b.Index))
		b.Release() // later batches reuse it: the clones must stay intact
	}
}

func TestLoaderDeterministicAcrossWorkers(t *testing.T) {
	cifar := t.TempDir()
	writeCIFAR10(t, cifar, 9, 4)
	folder := t.TempDir()
	writeFolder(t, folder, []string{"a", "b", "c"}, 5)
	for _, spec := range []string{"cifar10:" + cifar, "folder:" + folder + "?size=12&resize=14"} {
		train, _, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		frac, err := Fraction(train, 0.8, 3)
		if err != nil {
			t.Fatal(err)
		}
		base := LoaderConfig{Pass: Pass{Indices: frac, Batch: 4, Shuffle: true, Seed: 11, Train: true}, Epoch: 2}
		var ref [][]float32
		var refIdx [][]int
		for _, workers := range []int{1, 2, 3, 8} {
			cfg := base
			cfg.Workers, cfg.Prefetch = workers, workers%3+1
			xs, ys, idx, err := collect(t, train, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref, refIdx = xs, idx
				var all []int
				for b, ix := range idx {
					for j, i := range ix {
						if ys[b][j] != int64(train.Label(i)) {
							t.Fatalf("%s: label of %d is %d, want %d", spec, i, ys[b][j], train.Label(i))
						}
					}
					all = append(all, ix...)
				}
				slices.Sort(all)
				if !slices.Equal(all, frac) {
					t.Fatalf("%s: the pass visited %v, want each of %v once", spec, all, frac)
				}
				if slices.IsSorted(slices.Concat(idx...)) {
					t.Fatalf("%s: shuffle left the order sorted", spec)
				}
				continue
			}
			if !slices.EqualFunc(idx, refIdx, slices.Equal) || !slices.EqualFunc(xs, ref, slices.Equal) {
				t.Fatalf("%s: %d workers gave different batches from 1 worker", spec, workers)
			}
		}
		// Another epoch shuffles and augments differently; evaluation is fixed.
		cfg := base
		cfg.Epoch = 3
		xs, _, idx, _ := collect(t, train, cfg)
		if slices.EqualFunc(idx, refIdx, slices.Equal) || slices.EqualFunc(xs, ref, slices.Equal) {
			t.Fatalf("%s: epochs 2 and 3 gave the same pass", spec)
		}
		eval := LoaderConfig{Pass: Pass{Batch: 5}, Workers: 2}
		e1, _, _, _ := collect(t, train, eval)
		eval.Seed, eval.Workers = 99, 3
		e2, _, _, _ := collect(t, train, eval)
		if !slices.EqualFunc(e1, e2, slices.Equal) {
			t.Fatalf("%s: evaluation depends on the seed", spec)
		}
	}
}

func TestLoaderBatching(t *testing.T) {
	ds := &labelSet{labels: make([]int, 10), classes: 1}
	tests := []struct {
		cfg   LoaderConfig
		sizes []int
	}{
		{LoaderConfig{Pass: Pass{Batch: 4}}, []int{4, 4, 2}},
		{LoaderConfig{Pass: Pass{Batch: 4, DropLast: true}}, []int{4, 4}},
		{LoaderConfig{Pass: Pass{Batch: 5, DropLast: true}}, []int{5, 5}},
		{LoaderConfig{Pass: Pass{Batch: 20}}, []int{10}},
		{LoaderConfig{Pass: Pass{Batch: 20, DropLast: true}}, nil},
		{LoaderConfig{Pass: Pass{Batch: 3, Indices: []int{9, 1, 4}}}, []int{3}},
	}
	for _, tt := range tests {
		_, ys, idx, err := collect(t, ds, tt.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, y := range ys {
			sizes = append(sizes, len(y))
		}
		if !slices.Equal(sizes, tt.sizes) {
			t.Errorf("%+v: batch sizes %v, want %v", tt.cfg, sizes, tt.sizes)
		}
		if tt.cfg.Indices != nil && !slices.Equal(idx[0], tt.cfg.Indices) {
			t.Errorf("unshuffled indices %v, want %v", idx[0], tt.cfg.Indices)
		}
	}
	for _, cfg := range []LoaderConfig{{Pass: Pass{Batch: 0}}, {Pass: Pass{Batch: 2, Indices: []int{10}}}, {Pass: Pass{Batch: 2, Indices: []int{-1}}}} {
		if _, err := NewLoader(context.Background(), ds, cfg); err == nil {
			t.Errorf("NewLoader(%+v) succeeded", cfg)
		}
	}
}

func TestLoaderBadImage(t *testing.T) {
	root := t.TempDir()
	writeFolder(t, root, []string{"a", "b"}, 3)
	corrupt := filepath.Join(root, "train", "b", "img1.jpg")
	good, _ := os.ReadFile(corrupt)
	writeFile(t, corrupt, good[:len(good)/3]) // a truncated JPEG
	writeFile(t, filepath.Join(root, "train", "a", "img9.png"), []byte("not a png at all"))
	train, _, err := Open("folder:" + root + "?size=8&resize=8")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = collect(t, train, LoaderConfig{Pass: Pass{Batch: 2}, Workers: 2})
	var ee *ExampleError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "img9.png") || ee.Index != 3 {
		t.Fatalf("error %v, want an *ExampleError for a/img9.png, example 3", err)
	}
	var warnings []string
	cfg := LoaderConfig{Pass: Pass{Batch: 2}, Workers: 3, SkipBad: true, Warn: func(m string) { warnings = append(warnings, m) }}
	l, err := NewLoader(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += b.N
	}
	l.Close()
	if n != 5 || l.Skipped() != 2 || len(warnings) != 2 ||
		!strings.Contains(strings.Join(warnings, "\n"), "img9.png: example 3") || !strings.Contains(strings.Join(warnings, "\n"), filepath.Join("b", "img1.jpg")+": example 5") {
		t.Fatalf("%d examples, %d skipped, warnings %q", n, l.Skipped(), warnings)
	}
}

func TestLoaderCancel(t *testing.T) {
	ds := &labelSet{labels: make([]int, 1000), classes: 1}
	ctx, cancel := context.WithCancel(context.Background())
	l, err := NewLoader(ctx, ds, LoaderConfig{Pass: Pass{Batch: 2}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	for range 600 { // queued batches may still arrive; then the error
		if _, err = l.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v, want context.Canceled", err)
	}
	if _, err := l.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("error not sticky: %v", err)
	}
	l.Close()
	l.Close()
}

func TestLoaderReusesReleasedBatches(t *testing.T) {
	ds := &labelSet{labels: make([]int, 400), classes: 1}
	before := runtime.NumGoroutine()
	l, err := NewLoader(context.Background(), ds, LoaderConfig{Pass: Pass{Batch: 4}, Workers: 2, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*float32]bool{}
	next := 0
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range b.X { // a reused batch holds fresh values
			if int(x) != next+j || b.Index[j] != next+j {
				t.Fatalf("batch at %d: X[%d] = %v, Index %d", next, j, x, b.Index[j])
			}
		}
		next += b.N
		seen[&b.X[0]] = true
		b.Release()
	}
	l.Close()
	if next != 400 || len(seen) > 1+2+1+2 { // Prefetch + Workers + 1, and the free list's slack
		t.Fatalf("%d examples in %d distinct buffers: released batches are not reused", next, len(seen))
	}
	// All goroutines have ended.
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
}

// TestLoaderShards: the shards of a pass, batch by batch, concatenate to the
// unsharded pass (same examples, same augmentation), with empty slices kept.
func TestLoaderShards(t *testing.T) {
	cifar := t.TempDir()
	writeCIFAR10(t, cifar, 9, 4)
	train, _, err := Open("cifar10:" + cifar)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ batch, shards int }{{4, 2}, {5, 3}, {7, 2}, {2, 3}} {
		base := LoaderConfig{Pass: Pass{Batch: tt.batch, Shuffle: true, Seed: 5, Train: true}, Epoch: 1, Workers: 2}
		wantX, _, wantIdx, err := collect(t, train, base)
		if err != nil {
			t.Fatal(err)
		}
		parts := make([][][]float32, tt.shards)
		partIdx := make([][][]int, tt.shards)
		for r := range tt.shards {
			cfg := base
			cfg.Shard, cfg.Shards = r, tt.shards
			if parts[r], _, partIdx[r], err = collect(t, train, cfg); err != nil {
				t.Fatal(err)
			}
			if len(parts[r]) != len(wantX) {
				t.Fatalf("batch %d, shard %d of %d: %d batches, want %d (empty slices kept)", tt.batch, r, tt.shards, len(parts[r]), len(wantX))
			}
		}
		for b := range wantX {
			var x []float32
			var idx []int
			for r := range tt.shards {
				if d := len(partIdx[r][b]) - len(partIdx[tt.shards-1][b]); d < 0 || d > 1 {
					t.Fatalf("batch %d, shards %d: slice sizes not balanced", tt.batch, tt.shards)
				}
				x = append(x, parts[r][b]...)
				idx = append(idx, partIdx[r][b]...)
			}
			if !slices.Equal(idx, wantIdx[b]) || !slices.Equal(x, wantX[b]) {
				t.Fatalf("batch %d, %d shards: batch %d is %v, unsharded %v", tt.batch, tt.shards, b, idx, wantIdx[b])
			}
		}
	}
	if _, err := NewLoader(context.Background(), train, LoaderConfig{Pass: Pass{Batch: 2, Shard: 2, Shards: 2}}); err == nil {
		t.Error("shard 2 of 2 accepted")
	}
}
