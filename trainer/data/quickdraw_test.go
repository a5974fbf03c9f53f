package data

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/labels"
)

// quickDrawNames are the label set's categories, the files a folder must hold.
func quickDrawNames(t testing.TB) []string {
	t.Helper()
	set, err := labels.Builtin("quickdraw")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, set.Len())
	for i, c := range set.Classes {
		names[i] = c.Name
	}
	return names
}

// drawingLine is one drawing as the package writes it: every value v, as
// three decimals.
func drawingLine(v func(k int) float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for k := range 784 {
		if k > 0 {
			b.WriteByte(',')
		}
		x := v(k)
		if x == math.Trunc(x) {
			fmt.Fprintf(&b, "%d", int(x))
		} else {
			fmt.Fprintf(&b, "%.3f", x)
		}
	}
	b.WriteByte(']')
	return b.String()
}

func writeGz(t testing.TB, path, body string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(body))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// craftQuickDraw writes a folder of perClass drawings for every category:
// drawing j of class c has pixel 0 = j/255 and pixel 1 = (c%256)/255, so a
// test can tell which line of which file an example came from.
func craftQuickDraw(t testing.TB, perClass int) (dir string, names []string) {
	t.Helper()
	dir = t.TempDir()
	names = quickDrawNames(t)
	for c, name := range names {
		var b strings.Builder
		for j := range perClass {
			b.WriteString(drawingLine(func(k int) float64 {
				switch k {
				case 0:
					return float64(j) / 255
				case 1:
					return float64(c%256) / 255
				case 2:
					return float64(c/256) / 255
				}
				return 0
			}))
			b.WriteByte('\n')
		}
		writeGz(t, filepath.Join(dir, name+".ndjson.gz"), b.String())
	}
	return dir, names
}

func TestQuickDrawSplitIsFixedStratifiedAndDisjoint(t *testing.T) {
	dir, names := craftQuickDraw(t, 12)
	train, test, err := Open("quickdraw:" + dir + "?mean=0&std=0.00392156862745098") // x' = 255·x
	if err != nil {
		t.Fatal(err)
	}
	// Lines 5 and 10 of every file test (k%5 == 4 for k = 4, 9), the other ten train.
	if train.Len() != 10*len(names) || test.Len() != 2*len(names) {
		t.Fatalf("train %d, test %d: want %d and %d", train.Len(), test.Len(), 10*len(names), 2*len(names))
	}
	seen := map[[2]int]string{}
	for _, split := range []struct {
		name string
		ds   Dataset
	}{{"train", train}, {"test", test}} {
		perClass := make([]int, len(names))
		x := make([]float32, 784)
		for i := range split.ds.Len() {
			if err := split.ds.Decode(i, x, false, nil); err != nil {
				t.Fatal(err)
			}
			line, c := int(math.Round(float64(x[0]))), int(math.Round(float64(x[1])))+256*int(math.Round(float64(x[2])))
			if c != split.ds.Label(i) {
				t.Fatalf("%s example %d: label %d, drawn from class %d's file", split.name, i, split.ds.Label(i), c)
			}
			if want := split.name == "test"; (line%5 == 4) != want {
				t.Errorf("%s example %d: line index %d of class %d", split.name, i, line, c)
			}
			key := [2]int{c, line}
			if prev, dup := seen[key]; dup {
				t.Fatalf("class %d line %d is in %s and in %s", c, line, prev, split.name)
			}
			seen[key] = split.name
			perClass[c]++
		}
		for c, n := range perClass {
			if want := map[string]int{"train": 10, "test": 2}[split.name]; n != want {
				t.Fatalf("%s: class %d %q has %d drawings, want %d", split.name, c, names[c], n, want)
			}
		}
	}
	if len(seen) != 12*len(names) {
		t.Fatalf("%d distinct drawings in the two splits, want %d", len(seen), 12*len(names))
	}
	// The same folder gives the same split, example for example.
	train2, _, err := Open("quickdraw:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range train.Len() {
		if train.Label(i) != train2.Label(i) {
			t.Fatalf("second open: example %d has label %d, first %d", i, train2.Label(i), train.Label(i))
		}
	}
	if got := train.Classes(); got[0] != names[0] || len(got) != len(names) {
		t.Fatalf("classes %q…, want the label set's", got[:2])
	}
}

func TestQuickDrawBadFiles(t *testing.T) {
	dir, names := craftQuickDraw(t, 6)
	good := drawingLine(func(int) float64 { return 0.5 })
	file := filepath.Join(dir, names[3]+".ndjson.gz")
	three := func(bad string) string { return good + "\n" + good + "\n" + bad + "\n" + good + "\n" }
	tests := []struct {
		name, body, want string
	}{
		{"not an array", three(`{"a":1}`), ":3: not a JSON array"},
		{"783 values", three(strings.Replace(good, "0.500,", "", 1)), ":3: 783 values, want 784"},
		{"785 values", three(strings.Replace(good, "[", "[0,", 1)), ":3: more than 784 values"},
		{"above 1", three(strings.Replace(good, "0.500", "1.5", 1)), ":3: value 1: 1.5 is outside [0, 1]"},
		{"negative", three(strings.Replace(good, "0.500", "-0.1", 1)), ":3: value 1: -0.1 is outside [0, 1]"},
		{"NaN", three(strings.Replace(good, "0.500", "NaN", 1)), ":3: value 1: NaN is outside [0, 1]"},
		{"a word", three(strings.Replace(good, "0.500", "abc", 1)), `:3: value 1: "abc" is not a number`},
		{"empty value", three(strings.Replace(good, "0.500,", ",", 1)), `:3: value 1: "" is not a number`},
		{"trailing comma", three(strings.Replace(good, "]", ",]", 1)), ":3: value 785: empty (a trailing comma)"},
		{"empty line", good + "\n\n" + good + "\n", ":2: empty line"},
		{"long line", three(strings.Repeat("0,", 40000)), ":3: line longer than"},
		{"no drawings", "\n\n", ": no drawings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeGz(t, file, tt.body)
			_, _, err := Open("quickdraw:" + dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("Open = %v, want %q naming %s", err, tt.want, file)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
	t.Run("not gzip", func(t *testing.T) {
		os.WriteFile(file, []byte(good+"\n"), 0o644)
		if _, _, err := Open("quickdraw:" + dir); err == nil || !strings.Contains(err.Error(), file) {
			t.Fatalf("Open = %v, want an error naming %s", err, file)
		}
	})
	t.Run("truncated gzip", func(t *testing.T) {
		writeGz(t, file, three(good))
		b, _ := os.ReadFile(file)
		os.WriteFile(file, b[:len(b)/2], 0o644)
		if _, _, err := Open("quickdraw:" + dir); err == nil || !strings.Contains(err.Error(), file) {
			t.Fatalf("Open = %v, want an error naming %s", err, file)
		}
	})
	t.Run("skip-bad", func(t *testing.T) {
		writeGz(t, file, three(strings.Replace(good, "0.500", "2", 1))+good+"\n")
		var warned []string
		sp, err := ParseSpec("quickdraw:" + dir + "?skip-bad=1")
		if err != nil {
			t.Fatal(err)
		}
		sp.Options.Warn = func(m string) { warned = append(warned, m) }
		train, test, err := sp.Open()
		if err != nil {
			t.Fatal(err)
		}
		// Class 3: lines 1,2,4 train and 5 test (line 3 skipped); the others 5 + 1.
		if train.Len() != 5*len(names)-2 || test.Len() != len(names) || train.Skipped() != 1 || len(warned) != 1 {
			t.Fatalf("train %d test %d skipped %d warnings %q", train.Len(), test.Len(), train.Skipped(), warned)
		}
	})
	t.Run("missing category", func(t *testing.T) {
		os.Remove(file)
		_, _, err := Open("quickdraw:" + dir)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no drawings for 1 of the 345 categories: %q", names[3])) {
			t.Fatalf("Open = %v, want the missing category named", err)
		}
	})
	t.Run("extra category", func(t *testing.T) {
		writeGz(t, file, three(good))
		writeGz(t, filepath.Join(dir, "unicorn.ndjson.gz"), three(good))
		_, _, err := Open("quickdraw:" + dir)
		if err == nil || !strings.Contains(err.Error(), `unicorn.ndjson.gz: category "unicorn" is not one of quickdraw's 345`) {
			t.Fatalf("Open = %v, want the extra file named", err)
		}
	})
	t.Run("no files", func(t *testing.T) {
		_, _, err := Open("quickdraw:" + t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "no <category>.ndjson.gz files") {
			t.Fatalf("Open = %v", err)
		}
	})
}

// The npm package's layout (package/src/drawings) is found from its root.
func TestQuickDrawFindsThePackageLayout(t *testing.T) {
	dir, _ := craftQuickDraw(t, 5)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "package", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, filepath.Join(root, "package", "src", "drawings")); err != nil {
		t.Fatal(err)
	}
	train, test, err := Open("quickdraw:" + root)
	if err != nil || train.Len() != 4*345 || test.Len() != 345 {
		t.Fatalf("Open = %v", err)
	}
	if got := sniffKinds(root); len(got) != 1 || got[0] != "quickdraw" {
		t.Fatalf("sniffKinds = %v, want quickdraw", got)
	}
}

// The installed package (make deps installs it): 345 × 80 train, 20 test,
// the pixels equal to encoding/json's reading of the file, and the
// normalisation constants those of the training part.
func TestQuickDrawInstalled(t *testing.T) {
	if _, err := os.Stat(DefaultQuickDrawDir); err != nil {
		t.Fatalf("Quick, Draw! is not installed (%v): run `make deps` or `scripts/deps.sh quickdraw`", err)
	}
	train, test, err := Open("quickdraw?mean=0&std=0.00392156862745098") // x' = 255·x: bytes
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 345*80 || test.Len() != 345*20 || train.NumClasses() != 345 {
		t.Fatalf("train %d, test %d, %d classes: want 27600, 6900, 345", train.Len(), test.Len(), train.NumClasses())
	}
	// Class 20 ("bat"), line 5 is its first test drawing, line 1 its first training one.
	raw := readJSONLines(t, filepath.Join(DefaultQuickDrawDir, train.Classes()[20]+".ndjson.gz"))
	first := func(ds Dataset, c int) int {
		for i := range ds.Len() {
			if ds.Label(i) == c {
				return i
			}
		}
		return -1
	}
	x := make([]float32, 784)
	for _, tc := range []struct {
		ds   Dataset
		line int
	}{{train, 0}, {test, 4}} {
		if err := tc.ds.Decode(first(tc.ds, 20), x, false, nil); err != nil {
			t.Fatal(err)
		}
		for k, v := range raw[tc.line] {
			if want := math.Round(255 * v); math.Abs(float64(x[k])-want) > 1e-3 {
				t.Fatalf("line %d value %d: %v, want round(255·%v) = %v", tc.line+1, k, x[k], v, want)
			}
		}
	}
	// Mean and std of the training part's pixels in [0, 1].
	var s, s2 float64
	for i := range train.Len() {
		train.Decode(i, x, false, nil)
		for _, v := range x {
			s += float64(v) / 255
			s2 += float64(v) / 255 * float64(v) / 255
		}
	}
	n := float64(train.Len() * 784)
	mean, std := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	if math.Abs(mean-float64(quickDrawMean[0])) > 5e-5 || math.Abs(std-float64(quickDrawStd[0])) > 5e-5 {
		t.Fatalf("training part: mean %.5f std %.5f; Defaults has %v %v", mean, std, quickDrawMean, quickDrawStd)
	}
}

func readJSONLines(t *testing.T, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	var out [][]float64
	for dec.More() {
		var v []float64
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func BenchmarkOpenQuickDraw(b *testing.B) {
	for b.Loop() {
		if _, _, err := Open("quickdraw"); err != nil {
			b.Fatal(err)
		}
	}
}
