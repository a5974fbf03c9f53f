package similarity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
)

// targetSet is a three-class label set whose ids and names differ.
func targetSet() *labels.Set {
	return &labels.Set{Name: "pets", Classes: []labels.Class{
		{Index: 0, ID: "n01", Name: "cat"}, {Index: 1, ID: "n02", Name: "dog"}, {Index: 2, ID: "n03", Name: "fox"}}}
}

// The matrix every good file below holds (rows sum to 1 within 0.001).
var goodTargets = []float32{0.8, 0.1, 0.1, 0.2, 0.7, 0.1, 0.333, 0.333, 0.334}

// TestReadTargetsFormats: plain CSV, TSV, spaces, a header of names or
// ids (with lcl store export's "class" corner and row ids), comments and
// an .npy file with its ids file all read as the same matrix.
func TestReadTargetsFormats(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text string }{
		{"csv", "0.8,0.1,0.1\n0.2,0.7,0.1\n0.333,0.333,0.334\n"},
		{"tsv", "0.8\t0.1\t0.1\n0.2\t0.7\t0.1\n0.333\t0.333\t0.334\n"},
		{"spaces and comments", "# targets\n\n0.8 0.1  0.1\n0.2 0.7 0.1\n# last\n0.333 0.333 0.334\n"},
		{"semicolons", "0.8;0.1;0.1\n0.2;0.7;0.1\n0.333;0.333;0.334\n"},
		{"header of names", "cat,dog,fox\n0.8,0.1,0.1\n0.2,0.7,0.1\n0.333,0.333,0.334\n"},
		{"lcl store export", "class,n01,n02,n03\nn01,0.8,0.1,0.1\nn02,0.2,0.7,0.1\nn03,0.333,0.333,0.334\n"},
		{"row names, no header", "cat 0.8 0.1 0.1\ndog 0.2 0.7 0.1\nfox 0.333 0.333 0.334\n"},
		{"quoted header", "\"class\",\"cat\",\"dog\",\"fox\"\ncat,0.8,0.1,0.1\ndog,0.2,0.7,0.1\nfox,0.333,0.333,0.334\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv")
			os.WriteFile(path, []byte(tc.text), 0o644)
			data, c, err := ReadTargets(path, TargetOptions{Set: targetSet(), Classes: 3, Tolerance: 1e-3})
			if err != nil || c != 3 || !slices.Equal(data, goodTargets) {
				t.Fatalf("got %v (%d classes), %v; want %v", data, c, err, goodTargets)
			}
		})
	}
	t.Run("npy with ids", func(t *testing.T) {
		path := filepath.Join(dir, "t.npy")
		ids := filepath.Join(dir, "t.ids.txt") // the name lcl store export -o t.npy gives its ids
		if err := npy.WriteFileFloat32(path, 3, 3, goodTargets); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(ids, []byte("n01\nn02\nn03\n"), 0o644)
		data, c, err := ReadTargets(path, TargetOptions{Set: targetSet(), Tolerance: 1e-3})
		if err != nil || c != 3 || !slices.Equal(data, goodTargets) {
			t.Fatalf("got %v (%d classes), %v", data, c, err)
		}
		os.WriteFile(ids, []byte("n01\nn03\nn02\n"), 0o644)
		if _, _, err := ReadTargets(path, TargetOptions{Set: targetSet(), Tolerance: 1e-3}); err == nil ||
			!strings.Contains(err.Error(), `t.ids.txt:2: id "n03" is not class 1 of pets (dog, n02)`) {
			t.Fatalf("ids out of order: %v", err)
		}
		// An id with a space is one line, not two ids.
		boots := &labels.Set{Name: "boots", Classes: []labels.Class{
			{Index: 0, ID: "Ankle boot", Name: "Ankle boot"}, {Index: 1, ID: "Sandal", Name: "Sandal"}, {Index: 2, ID: "Bag", Name: "Bag"}}}
		os.WriteFile(ids, []byte("Ankle boot\r\nSandal\r\nBag\r\n"), 0o644)
		if _, _, err := ReadTargets(path, TargetOptions{Set: boots, Tolerance: 1e-3}); err != nil {
			t.Fatalf("ids with a space, CRLF lines: %v", err)
		}
	})
	t.Run("normalize", func(t *testing.T) {
		path := filepath.Join(dir, "weights.csv")
		os.WriteFile(path, []byte("8,1,1\n2,7,1\n1,1,1\n"), 0o644)
		data, _, err := ReadTargets(path, TargetOptions{Classes: 3, Tolerance: 1e-3, Normalize: true})
		if err != nil || data[0] != 8 {
			t.Fatalf("normalize: %v %v (values are returned as given)", data, err)
		}
	})
}

// TestReadTargetsRefusals: every bad matrix is refused with one line
// naming the file, the line and the reason.
func TestReadTargetsRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		normalize  bool
		want       string
	}{
		{"a row short of 1", "0.8,0.1,0.1\n0.2,0.6,0.1\n0.3,0.3,0.4\n", false,
			"F:2: row 1 (dog, n02) sums to 0.9, want 1 within 0.001 (or --param normalize=true to divide each row by its sum)"},
		{"a similarity matrix", "1,0.5,0.2\n0.5,1,0.3\n0.2,0.3,1\n", false, "F:1: row 0 (cat, n01) sums to 1.7, want 1 within 0.001"},
		{"negative", "# c\n0.8,0.1,0.1\n0.2,0.7,0.1\n0.5,-0.1,0.6\n", false, "F:4: row 2 (fox, n03), column 1: -0.1 is negative (targets are probabilities)"},
		{"NaN", "0.8,0.1,0.1\n0.2,NaN,0.1\n0.3,0.3,0.4\n", true, "F:2: row 1 (dog, n02), column 1: NaN is not finite"},
		{"infinite", "0.8,0.1,0.1\n0.2,0.7,0.1\n1e999,0,0\n", true, "F:3: row 2 (fox, n03), column 0: +Inf is not finite"},
		{"an empty cell", "0.8,,0.1\n0.2,0.7,0.1\n0.3,0.3,0.4\n", false, `F:1: row 0, column 1: "" is not a number`},
		{"a word", "0.8,0.1,0.1\n0.2,0.7,x\n0.3,0.3,0.4\n", false, `F:2: row 1, column 2: "x" is not a number`},
		{"a word in the first row", "0.8,x,0.1\n0.2,0.7,0.1\n0.3,0.3,0.4\n", false, `F:1: row 0, column 1: "x" is not a number`},
		{"a labelled row with a word", "cat,0.8,x,0.1\ndog,0.2,0.7,0.1\nfox,0.3,0.3,0.4\n", false, `F:1: row 0, column 1: "x" is not a number`},
		{"a zero row", "0.8,0.1,0.1\n0,0,0\n0.3,0.3,0.4\n", true, "F:2: row 1 (dog, n02) sums to 0: no target distribution"},
		{"too few columns", "0.8,0.2\n0.2,0.8\n", false, "F:1: the first row has 2 values but label set pets has 3 classes"},
		{"a ragged row", "0.8,0.1,0.1\n0.2,0.8\n0.3,0.3,0.4\n", false, "F:2: 2 cells, want 3 like the first row"},
		{"too few rows", "0.8,0.1,0.1\n0.2,0.7,0.1\n", false, "F:2: 2 rows of 3 values: want 3 rows, one per class"},
		{"too many rows", "0.8,0.1,0.1\n0.2,0.7,0.1\n0.3,0.3,0.4\n1,0,0\n", false, "F:4: more than 3 rows (one per class)"},
		{"header out of order", "cat,fox,dog\n0.8,0.1,0.1\n0.2,0.7,0.1\n0.3,0.3,0.4\n", false,
			`F:1: header column 1 is "fox", but class 1 of pets is dog, n02`},
		{"header of another set", "a,b,c,d,e\n", false, "F:1: the header names 5 classes but label set pets has 3 classes"},
		{"header of other classes", "class,cat,dog,wolf\n", false, `F:1: header column 2 is "wolf", but class 2 of pets is fox, n03`},
		{"a corner over too few", "class,a,b\n", false, "F:1: the header names 2 classes but label set pets has 3 classes"},
		{"row label out of order", "cat,0.8,0.1,0.1\nfox,0.2,0.7,0.1\ndog,0.3,0.3,0.4\n", false, `F:2: row 1 is labelled "fox", but class 1 is dog, n02`},
		{"empty", "# nothing\n", false, "F: no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv")
			os.WriteFile(path, []byte(tc.text), 0o644)
			_, _, err := ReadTargets(path, TargetOptions{Set: targetSet(), Classes: 3, Tolerance: 1e-3, Normalize: tc.normalize})
			want := strings.ReplaceAll(tc.want, "F", path)
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v\nwant one line with %q", err, want)
			}
		})
	}
	t.Run("npy of another size", func(t *testing.T) {
		path := filepath.Join(dir, "two.npy")
		npy.WriteFileFloat32(path, 2, 2, []float32{1, 0, 0, 1})
		if _, _, err := ReadTargets(path, TargetOptions{Classes: 3, Tolerance: 1e-3}); err == nil ||
			!strings.Contains(err.Error(), path+": matrix is 2×2 but the run has 3 classes") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("npy row sum", func(t *testing.T) {
		path := filepath.Join(dir, "sum.npy")
		npy.WriteFileFloat32(path, 2, 2, []float32{1, 0, 0.5, 0.6})
		if _, _, err := ReadTargets(path, TargetOptions{Tolerance: 1e-3}); err == nil ||
			!strings.Contains(err.Error(), path+": row 1 sums to 1.1, want 1 within 0.001") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		if _, _, err := ReadTargets(dir, TargetOptions{Tolerance: 1e-3}); err == nil {
			t.Fatal("a folder read as a matrix")
		}
	})
}
