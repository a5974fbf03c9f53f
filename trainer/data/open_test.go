package data

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	dir := t.TempDir()
	classFile := filepath.Join(dir, "classes.txt")
	writeFile(t, classFile, []byte("# order\nn02 : dog\n\nn01 : cat\n"))
	tests := []struct {
		spec    string
		kind    string
		dir     string
		check   func(Options) bool
		wantErr string
	}{
		{spec: "fashion-mnist", kind: "fashion-mnist", dir: DefaultFashionMNISTDir,
			check: func(o Options) bool { return o.Mean[0] == 0.2860 && o.Std[0] == 0.3530 && o.Pad == 0 && !o.Flip }},
		{spec: "fashion-mnist:/x?flip=true&pad=2", kind: "fashion-mnist", dir: "/x",
			check: func(o Options) bool { return o.Flip && o.Pad == 2 }},
		{spec: "mnist:/m", kind: "mnist", dir: "/m", check: func(o Options) bool { return o.Mean[0] == 0.1307 }},
		{spec: "cifar10:/c", kind: "cifar10", dir: "/c", check: func(o Options) bool { return o.Pad == 4 && o.Flip && len(o.Mean) == 3 }},
		{spec: "cifar100:/c?labels=coarse", kind: "cifar100", dir: "/c", check: func(o Options) bool { return o.Labels == "coarse" }},
		{spec: "cifar100:/c?augment=none", kind: "cifar100", dir: "/c", check: func(o Options) bool { return o.Pad == 0 && !o.Flip }},
		{spec: "folder:/i?size=128&resize=146&scale=0.2,1&ratio=0.5,2&skip-bad=1", kind: "folder", dir: "/i",
			check: func(o Options) bool {
				return o.Size == 128 && o.Resize == 146 && o.Scale == [2]float64{0.2, 1} && o.Ratio[0] == 0.5 && o.SkipBad && o.RandomResizedCrop
			}},
		{spec: "folder:/i?classes=" + classFile, kind: "folder", dir: "/i",
			check: func(o Options) bool { return slices.Equal(o.Classes, []string{"n02", "n01"}) }},
		{spec: "folder:/i?mean=0.5,0.5,0.5&std=0.25,0.25,0.25", kind: "folder", dir: "/i",
			check: func(o Options) bool { return o.Mean[1] == 0.5 && o.Std[2] == 0.25 }},
		{spec: "cub:/b", kind: "cub", dir: "/b", check: func(o Options) bool { return o.Size == 224 && o.Resize == 256 }},
		{spec: "nabirds:/n?rrc=false", kind: "nabirds", dir: "/n", check: func(o Options) bool { return !o.RandomResizedCrop }},
		{spec: "imagenet:/x", wantErr: "unknown data set kind"},
		{spec: "cifar10", wantErr: "want cifar10:DIR"},
		{spec: "cifar100:/c?labels=medium", wantErr: "want fine or coarse"},
		{spec: "folder:/i?size=300", wantErr: "size <= resize"},
		{spec: "folder:/i?mean=0.5", wantErr: "need 3 value"},
		{spec: "folder:/i?scale=0,1", wantErr: "scale"},
		{spec: "folder:/i?colour=1", wantErr: "unknown key"},
		{spec: "mnist:/m?std=0", wantErr: "positive"},
		{spec: "folder:/i?classes=/does/not/exist", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			sp, err := ParseSpec(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSpec(%q) error = %v, want one containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sp.Kind != tt.kind || sp.Dir != tt.dir || !tt.check(sp.Options) {
				t.Fatalf("ParseSpec(%q) = %+v", tt.spec, sp)
			}
		})
	}
}

// decodeAll decodes every example of ds without augmentation.
func decodeAll(t *testing.T, ds Dataset) [][]float32 {
	t.Helper()
	c, h, w := ds.Shape()
	out := make([][]float32, ds.Len())
	for i := range out {
		out[i] = make([]float32, c*h*w)
		if err := ds.Decode(i, out[i], false, nil); err != nil {
			t.Fatalf("Decode(%d): %v", i, err)
		}
	}
	return out
}

func TestOpenIDX(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		fix       idxFixture
		query     string
		wantErr   []string // substrings of the error
		wantTrain int
		wantSkip  int
	}{
		{name: "raw", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10)}, wantTrain: 20},
		{name: "gzip", kind: "fashion-mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), gzip: true}, wantTrain: 20},
		{name: "dot names", kind: "mnist", fix: idxFixture{h: 2, w: 2, train: cyclic(5, 10), test: cyclic(3, 10), dotNames: true, gzip: true}, wantTrain: 5},
		{name: "truncated images", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), cutImages: 13},
			wantErr: []string{"train-images-idx3-ubyte", "example 18", "truncated"}},
		{name: "truncated gzip images", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), gzip: true, cutImages: 9},
			wantErr: []string{"train-images-idx3-ubyte.gz", "example 19", "truncated"}}, // 8-byte gzip trailer + 1 byte of data
		{name: "truncated images skipped", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), cutImages: 13},
			query: "?skip-bad=1", wantTrain: 18, wantSkip: 2},
		{name: "truncated labels", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), cutLabels: 3},
			wantErr: []string{"train-labels-idx1-ubyte", "example 17", "truncated"}},
		{name: "truncated labels skipped", kind: "mnist", fix: idxFixture{h: 4, w: 3, train: cyclic(20, 10), test: cyclic(7, 10), cutLabels: 3},
			query: "?skip-bad=true", wantTrain: 17, wantSkip: 3},
		{name: "label out of range", kind: "fashion-mnist", fix: idxFixture{h: 2, w: 2, train: []uint8{0, 1, 12, 3, 4}, test: cyclic(3, 10)},
			wantErr: []string{"train-labels-idx1-ubyte", "example 2", "label 12 out of range 0..9"}},
		{name: "label out of range skipped", kind: "fashion-mnist", fix: idxFixture{h: 2, w: 2, train: []uint8{0, 1, 12, 3, 4}, test: cyclic(3, 10)},
			query: "?skip-bad=1", wantTrain: 4, wantSkip: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.fix.write(t, dir)
			var warnings []string
			sp, err := ParseSpec(tt.kind + ":" + dir + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			sp.Options.Warn = func(m string) { warnings = append(warnings, m) }
			train, test, err := sp.Open()
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Open succeeded, want error with %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				var ee *ExampleError
				if !errors.As(err, &ee) {
					t.Errorf("error %v is not an *ExampleError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != tt.wantTrain || test.Len() != len(tt.fix.test) || train.Skipped() != tt.wantSkip {
				t.Fatalf("train %d (skipped %d), test %d; want %d (%d), %d", train.Len(), train.Skipped(), test.Len(), tt.wantTrain, tt.wantSkip, len(tt.fix.test))
			}
			if (tt.wantSkip > 0) != (len(warnings) > 0) {
				t.Errorf("warnings %q with %d skipped", warnings, tt.wantSkip)
			}
			if c, h, w := train.Shape(); c != 1 || h != tt.fix.h || w != tt.fix.w || train.NumClasses() != 10 || len(train.Classes()) != 10 {
				t.Fatalf("shape %d,%d,%d classes %d", c, h, w, train.NumClasses())
			}
			// Every kept example decodes to its own pixel value and label.
			mean, std := sp.Options.Mean[0], sp.Options.Std[0]
			raw := 0
			for i, x := range decodeAll(t, train) {
				for raw < len(tt.fix.train) && tt.fix.train[raw] >= 10 {
					raw++
				}
				if l := train.Label(i); l != int(tt.fix.train[raw]) {
					t.Fatalf("Label(%d) = %d, want %d", i, l, tt.fix.train[raw])
				}
				want := (float32(idxPixel(raw, tt.fix.train[raw]))/255 - mean) / std
				if math.Abs(float64(x[0]-want)) > 1e-5 || math.Abs(float64(x[len(x)-1]-want)) > 1e-5 {
					t.Fatalf("example %d: got %v, want %v", i, x[0], want)
				}
				raw++
			}
		})
	}
}

func TestOpenIDXMissing(t *testing.T) {
	_, _, err := Open("mnist:" + t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no train-images file") {
		t.Fatalf("error %v, want one saying the file is missing", err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte"), []byte{0, 0, 9, 3, 0})
	writeFile(t, filepath.Join(dir, "train-labels-idx1-ubyte"), idxBytes([]int{0}, nil))
	if _, _, err := Open("mnist:" + dir); err == nil || !strings.Contains(err.Error(), "IDX magic") {
		t.Fatalf("error %v, want a bad-magic error", err)
	}
}

func TestOpenCIFAR(t *testing.T) {
	tests := []struct {
		name       string
		spec       string // %s = dir
		write      func(t *testing.T, dir string)
		wantErr    []string
		wantTrain  int
		wantTest   int
		wantSkip   int
		wantLabels func(i int) int
		classes    int
	}{
		{name: "cifar10", spec: "cifar10:%s", write: func(t *testing.T, d string) { writeCIFAR10(t, d, 4, 3) },
			wantTrain: 20, wantTest: 3, wantLabels: func(i int) int { return i % 10 }, classes: 10},
		{name: "cifar10 parent dir", spec: "cifar10:%s/..", write: func(t *testing.T, d string) { writeCIFAR10(t, filepath.Join(d, "..", "cifar-10-batches-bin"), 2, 1) },
			wantTrain: 10, wantTest: 1, wantLabels: func(i int) int { return i % 10 }, classes: 10},
		{name: "cifar100 fine", spec: "cifar100:%s", write: func(t *testing.T, d string) { writeCIFAR100(t, d, 30, 5) },
			wantTrain: 30, wantTest: 5, wantLabels: func(i int) int { return i % 100 }, classes: 100},
		{name: "cifar100 coarse", spec: "cifar100:%s?labels=coarse", write: func(t *testing.T, d string) { writeCIFAR100(t, d, 30, 5) },
			wantTrain: 30, wantTest: 5, wantLabels: func(i int) int { return i % 20 }, classes: 20},
		{name: "truncated", spec: "cifar10:%s", write: func(t *testing.T, d string) {
			writeCIFAR10(t, d, 4, 3)
			p := filepath.Join(d, "data_batch_3.bin")
			b, _ := os.ReadFile(p)
			writeFile(t, p, b[:len(b)-100])
		}, wantErr: []string{"data_batch_3.bin", "example 11", "truncated"}},
		{name: "truncated skipped", spec: "cifar10:%s?skip-bad=1", write: func(t *testing.T, d string) {
			writeCIFAR10(t, d, 4, 3)
			p := filepath.Join(d, "data_batch_3.bin")
			b, _ := os.ReadFile(p)
			writeFile(t, p, b[:len(b)-100])
		}, wantTrain: 19, wantTest: 3, wantSkip: 1, classes: 10,
			wantLabels: func(i int) int { return []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 2, 3, 4, 5, 6, 7, 8, 9}[i] }},
		{name: "label out of range", spec: "cifar10:%s", write: func(t *testing.T, d string) {
			writeCIFAR10(t, d, 2, 3)
			writeFile(t, filepath.Join(d, "test_batch.bin"), append(cifarRecord(0, 3), cifarRecord(1, 10)...))
		}, wantErr: []string{"test_batch.bin", "example 1", "label 10 out of range 0..9"}},
		{name: "label out of range skipped", spec: "cifar10:%s?skip-bad=true", write: func(t *testing.T, d string) {
			writeCIFAR10(t, d, 2, 3)
			writeFile(t, filepath.Join(d, "test_batch.bin"), append(cifarRecord(0, 3), cifarRecord(1, 10)...))
		}, wantTrain: 10, wantTest: 1, classes: 10, wantLabels: func(i int) int { return i % 10 }},
		{name: "missing", spec: "cifar100:%s", write: func(*testing.T, string) {}, wantErr: []string{"train.bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			tt.write(t, dir)
			train, test, err := Open(strings.Replace(tt.spec, "%s", dir, 1))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Open succeeded, want error with %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != tt.wantTrain || test.Len() != tt.wantTest || train.Skipped() != tt.wantSkip || train.NumClasses() != tt.classes {
				t.Fatalf("train %d (skipped %d), test %d, classes %d", train.Len(), train.Skipped(), test.Len(), train.NumClasses())
			}
			for i := range train.Len() {
				if train.Label(i) != tt.wantLabels(i) {
					t.Fatalf("Label(%d) = %d, want %d", i, train.Label(i), tt.wantLabels(i))
				}
			}
			// Pixels: channel ch at column x of raw example r is r+50ch+x.
			o := &Options{}
			*o, _ = Defaults("cifar10")
			x := decodeAll(t, train)
			for _, i := range []int{0, train.Len() - 1} {
				r := i
				if tt.wantSkip > 0 && i >= 11 {
					r = i + 1
				}
				for ch := range 3 {
					for _, col := range []int{0, 31} {
						want := (float32(byte(r+50*ch+col))/255 - o.Mean[ch]) / o.Std[ch]
						if tt.name == "cifar100 fine" || tt.name == "cifar100 coarse" {
							o2, _ := Defaults("cifar100")
							want = (float32(byte(r+50*ch+col))/255 - o2.Mean[ch]) / o2.Std[ch]
						}
						if got := x[i][ch*1024+5*32+col]; math.Abs(float64(got-want)) > 1e-5 {
							t.Fatalf("example %d channel %d column %d: %v, want %v", i, ch, col, got, want)
						}
					}
				}
			}
		})
	}
}

func TestCIFAR10ClassNames(t *testing.T) {
	dir := t.TempDir()
	writeCIFAR10(t, dir, 1, 1)
	train, _, err := Open("cifar10:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := train.Classes(); got[0] != "airplane" || got[9] != "truck" {
		t.Fatalf("classes %v", got)
	}
	writeFile(t, filepath.Join(dir, "batches.meta.txt"), []byte("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n\n"))
	if train, _, err = Open("cifar10:" + dir); err != nil {
		t.Fatal(err)
	}
	if got := train.Classes(); got[0] != "a" || got[9] != "j" {
		t.Fatalf("classes from batches.meta.txt: %v", got)
	}
}

func TestFolder(t *testing.T) {
	root := t.TempDir()
	writeFolder(t, root, []string{"zebra", "ant", "moth"}, 4)
	writeFile(t, filepath.Join(root, "train", "ant", "notes.txt"), []byte("not an image"))
	train, test, err := Open("folder:" + root + "?size=16&resize=20")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train.Classes(), []string{"ant", "moth", "zebra"}) {
		t.Fatalf("classes %v, want sorted folder names", train.Classes())
	}
	if train.Len() != 12 || test.Len() != 12 {
		t.Fatalf("train %d test %d, want 12 and 12", train.Len(), test.Len())
	}
	if c, h, w := train.Shape(); c != 3 || h != 16 || w != 16 {
		t.Fatalf("shape %d×%d×%d", c, h, w)
	}
	// Red channel encodes the class (40·k in the original order zebra, ant, moth).
	orig := map[string]int{"zebra": 0, "ant": 1, "moth": 2}
	for i, x := range decodeAll(t, test) {
		k := orig[train.Classes()[test.Label(i)]]
		want := (float32(40*k)/255 - 0.485) / 0.229
		if got := x[8*16+8]; math.Abs(float64(got-want)) > 0.05 {
			t.Fatalf("example %d (class %d): red %v, want ≈ %v", i, test.Label(i), got, want)
		}
	}

	classFile := filepath.Join(t.TempDir(), "order.txt")
	writeFile(t, classFile, []byte("moth\nzebra\nant\nbee\n"))
	train, _, err = Open("folder:" + root + "?classes=" + classFile)
	if err != nil {
		t.Fatal(err)
	}
	if train.NumClasses() != 4 || train.Label(0) != 2 || train.Label(11) != 1 {
		t.Fatalf("with a class list: %d classes, labels %d..%d", train.NumClasses(), train.Label(0), train.Label(11))
	}
	writeFile(t, classFile, []byte("moth\nzebra\n"))
	_, _, err = Open("folder:" + root + "?classes=" + classFile)
	if err == nil || !strings.Contains(err.Error(), `class folder "ant" is not in the label set`) || !strings.Contains(err.Error(), "img0.jpg") {
		t.Fatalf("error %v, want one naming the unlisted class folder and file", err)
	}
	train, _, err = Open("folder:" + root + "?skip-bad=1&classes=" + classFile)
	if err != nil || train.Len() != 8 || train.Skipped() != 4 {
		t.Fatalf("skip-bad: err %v, len %d, skipped %d", err, train.Len(), train.Skipped())
	}
	// "test" stands in for a missing "val".
	if err := os.Rename(filepath.Join(root, "val"), filepath.Join(root, "test")); err != nil {
		t.Fatal(err)
	}
	if _, test, err = Open("folder:" + root); err != nil || test.Len() != 12 {
		t.Fatalf("with test/: %v", err)
	}
}

func TestBirds(t *testing.T) {
	tests := []struct {
		name     string
		kind     string
		ids      []int
		names    map[int]string
		mutate   func(t *testing.T, root string)
		wantErr  string
		classes  []string
		wantSkip int
		query    string
	}{
		{name: "cub", kind: "cub", ids: []int{1, 2, 3}, names: map[int]string{1: "001.A", 2: "002.B", 3: "003.C"},
			classes: []string{"001.A", "002.B", "003.C"}},
		{name: "nabirds sparse ids", kind: "nabirds", ids: []int{817, 295, 1000},
			names:   map[int]string{0: "Birds", 295: "Loon", 817: "Duck", 1000: "Wren", 5: "Unused"},
			classes: []string{"Loon", "Duck", "Wren"}},
		{name: "no label", kind: "cub", ids: []int{1, 2}, names: map[int]string{1: "A", 2: "B"},
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "image_class_labels.txt"), []byte("id0 1\nid1 1\nid2 1\nid3 1\nid4 2\nid5 2\nid6 2\n"))
			}, wantErr: "image id id7 has no label"},
		{name: "class out of range", kind: "cub", ids: []int{1, 2}, names: map[int]string{1: "A", 2: "B"},
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "image_class_labels.txt"), []byte("id0 1\nid1 1\nid2 1\nid3 1\nid4 2\nid5 2\nid6 2\nid7 9\n"))
			}, wantErr: "image_class_labels.txt: example 7: image id id7: class \"9\" out of range"},
		{name: "class out of range skipped", kind: "cub", ids: []int{1, 2}, names: map[int]string{1: "A", 2: "B"}, query: "?skip-bad=1",
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "image_class_labels.txt"), []byte("id0 1\nid1 1\nid2 1\nid3 1\nid4 2\nid5 2\nid6 2\nid7 9\n"))
			}, classes: []string{"A", "B"}, wantSkip: 1},
		{name: "bad line", kind: "nabirds", ids: []int{1}, names: map[int]string{1: "A"},
			mutate: func(t *testing.T, root string) {
				writeFile(t, filepath.Join(root, "train_test_split.txt"), []byte("id0 1\nid1\n"))
			}, wantErr: "train_test_split.txt:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeBirds(t, root, tt.ids, tt.names, 4)
			if tt.mutate != nil {
				tt.mutate(t, root)
			}
			train, test, err := Open(tt.kind + ":" + root + tt.query)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(train.Classes(), tt.classes) {
				t.Fatalf("classes %v, want %v", train.Classes(), tt.classes)
			}
			n := 4 * len(tt.ids)
			if train.Len()+test.Len()+train.Skipped()+test.Skipped() != n || train.Skipped()+test.Skipped() != tt.wantSkip || train.Len() == 0 || test.Len() == 0 {
				t.Fatalf("train %d test %d skipped %d+%d, want %d in all", train.Len(), test.Len(), train.Skipped(), test.Skipped(), n)
			}
			decodeAll(t, train)
			decodeAll(t, test)
		})
	}
}

func TestSmallTransform(t *testing.T) {
	// A 1×2×3 image; pad 1, flip.
	src := []byte{0, 51, 102, 153, 204, 255}
	opt := &Options{Mean: []float32{0.5}, Std: []float32{0.5}, Pad: 1, Flip: true}
	v := func(p byte) float32 { return (float32(p)/255 - 0.5) / 0.5 }
	pad := float32(-1)
	dst := make([]float32, 6)
	if err := smallTransform(src, 1, 2, 3, dst, nil, opt, false, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range src {
		if math.Abs(float64(dst[i]-v(p))) > 1e-6 {
			t.Fatalf("eval: %v", dst)
		}
	}
	// Enumerate the augmentations a generator may draw; all must be valid
	// shifted/flipped copies, and several distinct ones must occur.
	// Keys in units of 1e-4, so float rounding does not split equal images.
	key := func(x []float32) (k [6]int) {
		for i, v := range x {
			k[i] = int(math.Round(float64(v) * 1e4))
		}
		return k
	}
	seen := map[[6]int]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		if err := smallTransform(src, 1, 2, 3, dst, nil, opt, true, rng); err != nil {
			t.Fatal(err)
		}
		seen[key(dst)] = true
	}
	valid := map[[6]int]bool{}
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			for _, flip := range []bool{false, true} {
				var want [6]float32
				for y := range 2 {
					for x := range 3 {
						cx := x
						if flip {
							cx = 2 - x
						}
						sy, sx := y+dy, cx+dx
						want[y*3+x] = pad
						if sy >= 0 && sy < 2 && sx >= 0 && sx < 3 {
							want[y*3+x] = v(src[sy*3+sx])
						}
					}
				}
				valid[key(want[:])] = true
			}
		}
	}
	for s := range seen {
		if !valid[s] {
			t.Fatalf("augmented %v is not a padded crop or flip of the source", s)
		}
	}
	if len(seen) < 12 {
		t.Fatalf("only %d distinct augmentations out of 18 in 200 draws", len(seen))
	}
}

func TestCropRect(t *testing.T) {
	opt, _ := Defaults("folder")
	tests := []struct {
		w, h int
		want string
	}{
		{w: 512, h: 256, want: "(144,16)-(368,240)"}, // centre 224/256 of the 256 shorter side
		{w: 256, h: 256, want: "(16,16)-(240,240)"},
		{w: 100, h: 300, want: "(6,106)-(94,194)"},
	}
	for _, tt := range tests {
		if got := cropRect(tt.w, tt.h, &opt, false, nil).String(); got != tt.want {
			t.Errorf("eval crop of %dx%d = %s, want %s", tt.w, tt.h, got, tt.want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		w, h := 10+rng.IntN(500), 10+rng.IntN(500)
		r := cropRect(w, h, &opt, true, rng)
		if r.Min.X < 0 || r.Min.Y < 0 || r.Max.X > w || r.Max.Y > h || r.Empty() {
			t.Fatalf("crop %v outside %dx%d", r, w, h)
		}
		// Inside the ranges (with rounding slack), or the central fallback.
		area := float64(r.Dx()*r.Dy()) / float64(w*h)
		ratio := float64(r.Dx()) / float64(r.Dy())
		fallback := r.Dx() == w || r.Dy() == h
		if !fallback && (area < 0.08*0.8 || ratio < 0.75*0.8 || ratio > 4.0/3*1.25) {
			t.Fatalf("crop %v of %dx%d: area %.3f ratio %.3f", r, w, h, area, ratio)
		}
	}
}

func TestSynthetic(t *testing.T) {
	train, test, err := Open("synthetic?n=50&test=7&classes=5&shape=1,4,6")
	if err != nil {
		t.Fatal(err)
	}
	if c, h, w := train.Shape(); train.Len() != 50 || test.Len() != 7 || train.NumClasses() != 5 || c != 1 || h != 4 || w != 6 || train.Label(13) != 3 {
		t.Fatalf("synthetic: %d/%d examples, %d classes, shape %d×%d×%d", train.Len(), test.Len(), train.NumClasses(), c, h, w)
	}
	a, b := decodeAll(t, train), decodeAll(t, train)
	if !slices.Equal(a[3], b[3]) || slices.Equal(a[3], a[4]) {
		t.Fatal("synthetic examples are not fixed per index or not distinct")
	}
	if train, _, err = Open("synthetic"); err != nil || train.Len() != 1024 {
		t.Fatalf("defaults: %v", err)
	}
	for _, bad := range []string{"synthetic?n=0", "synthetic?shape=3,224", "synthetic?colour=1", "synthetic?signal=-1", "synthetic?signal=NaN"} {
		if _, _, err := Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// With signal=S every pixel moves by ±S, the sign fixed per class and pixel
// and the same in both splits: a nearest-class-mean classifier fitted on
// the training split labels the test split; without signal it is at chance.
func TestSyntheticSignal(t *testing.T) {
	const q = "synthetic?n=200&test=100&classes=4&shape=1,8,8"
	plain, _, err := Open(q)
	if err != nil {
		t.Fatal(err)
	}
	noise := decodeAll(t, plain)
	for _, tc := range []struct {
		signal   float64
		min, max float64 // accuracy bounds of the nearest-class-mean classifier
	}{{0, 0, 0.45}, {0.5, 0.99, 1}} {
		train, test, err := Open(fmt.Sprintf("%s&signal=%g", q, tc.signal))
		if err != nil {
			t.Fatal(err)
		}
		tr := decodeAll(t, train)
		for i := range tr { // each pixel is the noise plus or minus the signal
			for j := range tr[i] {
				if d := math.Abs(float64(tr[i][j] - noise[i][j])); math.Abs(d-tc.signal) > 1e-5 {
					t.Fatalf("signal %g: example %d pixel %d moved by %g", tc.signal, i, j, d)
				}
			}
		}
		means := make([][]float64, 4)
		for i, x := range tr {
			k := train.Label(i)
			if means[k] == nil {
				means[k] = make([]float64, len(x))
			}
			for j, v := range x {
				means[k][j] += float64(v)
			}
		}
		right := 0
		for i, x := range decodeAll(t, test) {
			best, bk := math.Inf(1), -1
			for k, m := range means {
				d := 0.0
				for j, v := range x {
					e := float64(v) - m[j]/50
					d += e * e
				}
				if d < best {
					best, bk = d, k
				}
			}
			if bk == test.Label(i) {
				right++
			}
		}
		if acc := float64(right) / 100; acc < tc.min || acc > tc.max {
			t.Errorf("signal %g: nearest-class-mean accuracy %.2f, want %.2f to %.2f", tc.signal, acc, tc.min, tc.max)
		}
	}
}

func TestImageTransformColourModels(t *testing.T) {
	fill := func(img draw.Image, c color.Color) image.Image {
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				img.Set(x, y, c)
			}
		}
		return img
	}
	ycbcr := func(r image.Rectangle, red, green, blue uint8) image.Image {
		img := image.NewYCbCr(r, image.YCbCrSubsampleRatio420)
		y, cb, cr := color.RGBToYCbCr(red, green, blue)
		for i := range img.Y {
			img.Y[i] = y
		}
		for i := range img.Cb {
			img.Cb[i], img.Cr[i] = cb, cr
		}
		return img
	}
	r := image.Rect(3, 5, 53, 35) // a non-zero origin, as sub-images have
	tests := []struct {
		name string
		img  image.Image
		rgb  [3]float64
	}{
		{"rgba", fill(image.NewRGBA(r), color.RGBA{200, 100, 50, 255}), [3]float64{200, 100, 50}},
		{"gray", fill(image.NewGray(r), color.Gray{77}), [3]float64{77, 77, 77}},
		{"gray16", fill(image.NewGray16(r), color.Gray16{0xffff}), [3]float64{255, 255, 255}},
		{"nrgba half transparent", fill(image.NewNRGBA(r), color.NRGBA{200, 100, 50, 128}), [3]float64{100.4, 50.2, 25.1}},
		{"cmyk", fill(image.NewCMYK(r), color.CMYK{0, 255, 255, 0}), [3]float64{255, 0, 0}},
		{"ycbcr 4:2:0", ycbcr(r, 60, 120, 180), [3]float64{60, 120, 180}},
	}
	opt, _ := Defaults("folder")
	opt.Size, opt.Resize = 8, 9
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]float32, 3*64)
			rng := rand.New(rand.NewPCG(1, 1))
			for _, train := range []bool{false, true} {
				if err := imageTransform(tt.img, dst, nil, new(resampler), &opt, train, rng); err != nil {
					t.Fatal(err)
				}
				for c := range 3 {
					want := (tt.rgb[c]/255 - float64(opt.Mean[c])) / float64(opt.Std[c])
					for _, v := range dst[c*64 : (c+1)*64] {
						if math.Abs(float64(v)-want) > 0.02 {
							t.Fatalf("train=%v channel %d: %v, want %v", train, c, v, want)
						}
					}
				}
			}
		})
	}
}

// A folder opened as the wrong kind: the error names the spec that would
// read it; opened as its own kind (files damaged) it names none.
func TestOpenWrongKindNamesTheRightOne(t *testing.T) {
	for _, tc := range []struct {
		file, kind, want string
	}{
		{"train-images-idx3-ubyte.gz", "cifar100", "--data fashion-mnist:DIR or --data mnist:DIR"},
		{"cifar-100-binary/train.bin", "fashion-mnist", "--data cifar100:DIR"},
		{"data_batch_1.bin", "cifar100", "--data cifar10:DIR"},
		{"CUB_200_2011/images.txt", "folder", "--data cub:DIR or --data nabirds:DIR"},
		{"train/cat/x.png", "cifar10", "--data folder:DIR"},
		{"train.bin", "cifar100", ""}, // its own kind, an empty file
		{"notes.txt", "cifar100", ""}, // no kind's files
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, tc.file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		opts, err := Defaults(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Spec{Kind: tc.kind, Dir: dir, Options: opts}.Open()
		if err == nil {
			t.Fatalf("%s as %s: no error", tc.file, tc.kind)
		}
		msg := strings.ReplaceAll(err.Error(), dir, "DIR")
		if tc.want == "" && strings.Contains(msg, "--data") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s as %s: %s; want it to name %q", tc.file, tc.kind, msg, tc.want)
		}
	}
}
