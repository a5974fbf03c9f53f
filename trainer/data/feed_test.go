package data

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer"
)

// TestTrainerLoader: a pass through the trainer's interface yields the
// batches of a Loader with the trainer's selection (every field of
// trainer.Pass reaches it, base.Pass is ignored) and base's
// settings; a batch stays intact until the next is asked for; Close stops
// the workers; a dataset of another package is refused by name.
func TestTrainerLoader(t *testing.T) {
	dir := t.TempDir()
	writeCIFAR10(t, dir, 8, 2) // 40 training images; augmented when Train is set
	train, _, err := Open("cifar10:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	base := LoaderConfig{Pass: Pass{Batch: 1000, Seed: 99}, Workers: 3, Prefetch: 1, Warn: func(m string) { warned = append(warned, m) }}
	load := BatchSource(base)
	var xs [][][]float32
	for _, pass := range []trainer.Pass{
		{Batch: 8},
		{Indices: []int{30, 2, 17, 4, 9, 11, 12, 36, 0}, Batch: 4, Shuffle: true, Seed: 7, Train: true},
		{Indices: []int{30, 2, 17, 4, 9, 11, 12, 36, 0}, Batch: 4, Shuffle: true, Seed: 7},
		{Batch: 5, Shuffle: true, Seed: 3, Train: true, DropLast: true},
		{Batch: 6, Shuffle: true, Seed: 3, Shard: 1, Shards: 3},
	} {
		want := base
		want.Pass = pass
		wantX, wantY, wantIdx, err := collect(t, train, want)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, wantX)
		it, err := load(context.Background(), train, pass)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; ; k++ {
			b, err := it.Next()
			if err == io.EOF {
				if k != len(wantX) {
					t.Fatalf("%+v: %d batches, want %d", pass, k, len(wantX))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // the workers run ahead meanwhile: they must not touch b
			if !slices.Equal(b.X, wantX[k]) || !slices.Equal(b.Y, wantY[k]) || !slices.Equal(b.Index, wantIdx[k]) || b.N != len(wantY[k]) {
				t.Fatalf("%+v: batch %d is %v, want %v", pass, k, b.Index, wantIdx[k])
			}
		}
		c, ok := it.(io.Closer)
		if !ok {
			t.Fatalf("%T does not close", it)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The fixture makes Train matter (else the cases above could not tell).
	if slices.EqualFunc(xs[1], xs[2], slices.Equal) {
		t.Fatal("augmented and plain passes are equal")
	}
	if len(warned) != 0 {
		t.Errorf("warnings: %q", warned)
	}

	// Close mid-pass stops the workers.
	before := runtime.NumGoroutine()
	it, err := load(context.Background(), train, trainer.Pass{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := it.Next(); err != nil {
		t.Fatal(err)
	}
	it.(io.Closer).Close()
	for range 100 {
		if runtime.NumGoroutine() <= before {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}

	if _, err := load(context.Background(), foreignSet{}, trainer.Pass{Batch: 1}); err == nil || !strings.Contains(err.Error(), "data.foreignSet") {
		t.Errorf("foreign dataset: %v", err)
	}
}

// foreignSet is a trainer.Examples that trainer/data cannot decode.
type foreignSet struct{}

func (foreignSet) Len() int             { return 1 }
func (foreignSet) NumClasses() int      { return 1 }
func (foreignSet) Shape() (c, h, w int) { return 1, 1, 1 }
func (foreignSet) Label(int) int        { return 0 }
