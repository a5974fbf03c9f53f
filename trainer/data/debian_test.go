package data

import (
	"context"
	"io"
	"math"
	"os"
	"testing"
)

// TestDebianFashionMNIST reads the real data set from Debian's
// dataset-fashion-mnist package. A missing package is a failure: the project
// depends on it (make deps installs it).
func TestDebianFashionMNIST(t *testing.T) {
	if _, err := os.Stat(DefaultFashionMNISTDir); err != nil {
		t.Fatalf("Fashion-MNIST is not installed (%v): run `make deps` or `sudo apt-get install dataset-fashion-mnist`", err)
	}
	train, test, err := Open("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 60000 || test.Len() != 10000 || train.NumClasses() != 10 || train.Skipped() != 0 {
		t.Fatalf("train %d, test %d, classes %d, skipped %d; want 60000, 10000, 10, 0", train.Len(), test.Len(), train.NumClasses(), train.Skipped())
	}
	if c, h, w := train.Shape(); c != 1 || h != 28 || w != 28 {
		t.Fatalf("shape %d×%d×%d, want 1×28×28", c, h, w)
	}
	for _, s := range []struct {
		name string
		ds   Dataset
		per  int
	}{{"train", train, 6000}, {"test", test, 1000}} {
		count := make([]int, 10)
		for i := range s.ds.Len() {
			count[s.ds.Label(i)]++
		}
		for c, n := range count {
			if n != s.per {
				t.Errorf("%s: class %d (%s) has %d examples, want %d", s.name, c, train.Classes()[c], n, s.per)
			}
		}
	}
	// Labels and pixels agree with an independent reading (numpy over the
	// same .gz files): first labels, and pixel sums of the first and last image.
	for _, s := range []struct {
		ds   Dataset
		want []int
	}{{train, []int{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}}, {test, []int{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}}} {
		for i, w := range s.want {
			if s.ds.Label(i) != w {
				t.Fatalf("label %d = %d, want %d", i, s.ds.Label(i), w)
			}
		}
	}
	rawTrain, _, err := Open("fashion-mnist?mean=0&std=0.00392156862745098") // x' = 255·x: pixel values
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]float32, 784)
	for _, c := range []struct{ i, sum int }{{0, 76247}, {59999, 16684}} {
		if err := rawTrain.Decode(c.i, raw, false, nil); err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, v := range raw {
			sum += float64(v)
		}
		if math.Abs(sum-float64(c.sum)) > 1 {
			t.Fatalf("pixel sum of training image %d = %v, want %d", c.i, sum, c.sum)
		}
	}
	// DR 10%: 600 per class.
	idx, err := Fraction(train, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	count := make([]int, 10)
	for _, i := range idx {
		count[train.Label(i)]++
	}
	for c, n := range count {
		if n != 600 {
			t.Errorf("fraction 0.1: class %d has %d examples, want 600", c, n)
		}
	}
	// The documented normalisation makes the training set zero-mean and
	// unit-variance: it reproduces Fashion-MNIST's mean 0.2860 and std 0.3530.
	l, err := NewLoader(context.Background(), train, LoaderConfig{Pass: Pass{Batch: 1000}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var sum, sq float64
	var n int
	for {
		b, err := l.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range b.X {
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		n += len(b.X)
		b.Release()
	}
	mean := sum / float64(n)
	std := math.Sqrt(sq/float64(n) - mean*mean)
	if math.Abs(mean) > 2e-3 || math.Abs(std-1) > 3e-3 {
		t.Fatalf("normalised training set: mean %.4f, std %.4f; want 0 and 1", mean, std)
	}
}
