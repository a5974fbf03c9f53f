package similarity

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
)

// The audit's SimRank input: an edge list of 40,000 nodes would need 38 GB
// of dense matrices. Plain SimRank now computes only the classes' block from
// the one internal node (bounded allocation, the right values); the star
// variant, which needs the dense form, is refused before computing, with the
// estimate, the limit and the flags in the message.
func TestSimRankRefusesLargeGraphs(t *testing.T) {
	var b strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&b, "c%d root\n", i)
	}
	path := filepath.Join(t.TempDir(), "big.edges")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set := &labels.Set{Name: "t", Classes: []labels.Class{{Index: 0, ID: "c0", Name: "c0"}, {Index: 1, ID: "c1", Name: "c1"}}}
	var res *Result
	var err error
	boundedtest.MaxAlloc(t, 64<<20, "plain SimRank on a 40,000-node graph", func() {
		res, err = SimRankSource{}.Compute(context.Background(), set, map[string]string{"graph": path})
	})
	// Siblings under the root: s(c0,c1) = C·s(root,root) = 0.8.
	if err != nil || res.At(0, 1) != float64(float32(0.8)) || res.At(1, 0) != res.At(0, 1) || res.At(0, 0) != 1 {
		t.Fatalf("plain SimRank: %v, %v", res, err)
	}
	boundedtest.MaxAlloc(t, 64<<20, "refusing SimRank* on a 40,000-node graph", func() {
		_, err = SimRankSource{MaxMemory: 8e9}.Compute(context.Background(), set, map[string]string{"graph": path, "variant": "star"})
	})
	want := "graph " + path + ": SimRank variant star on 40001 nodes (3 dense 40001×40001 float64 matrices; --variant jeh-widom computes only the classes' block) needs about 38.4 GB, over the memory limit of 8.0 GB (--max-memory; default: this machine's memory)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if _, _, err := SimRank(context.Background(), &Graph{Nodes: make([]string, MaxSimRankNodes+1), Parents: make([][]int, MaxSimRankNodes+1)}, SimRankOptions{Decay: 0.8, Iterations: 1, Tolerance: 1e-6}); err == nil || !strings.HasPrefix(err.Error(), "simrank: the graph has 10001 nodes") {
		t.Fatalf("SimRank on 10001 nodes: %v", err)
	}
}

// A --matrix .npy whose data is shorter than its shape is refused from its
// header (the audit's fatal out-of-memory).
func TestReadMatrixFileShort(t *testing.T) {
	var b bytes.Buffer
	if err := npy.Write(&b, 2, 2, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(b.Bytes(), []byte("(2, 2)"), []byte("(40000, 40000)"), 1)
	path := filepath.Join(t.TempDir(), "m.npy")
	os.WriteFile(path, raw, 0o644)
	var err error
	boundedtest.MaxAlloc(t, 1<<20, "reading a 160-byte .npy that announces 12.8 GB", func() { _, _, err = ReadMatrixFile(path) })
	if err == nil || !strings.HasPrefix(err.Error(), path+": npy: shape (40000, 40000) of <f8 needs 12800000000 bytes of data, the file holds 40") {
		t.Fatalf("err = %v", err)
	}
	long := filepath.Join(t.TempDir(), "m.csv")
	os.WriteFile(long, []byte("1,2\n"+strings.Repeat("1", 1<<26+1)+"\n"), 0o644)
	if _, _, err := ReadMatrixFile(long); err == nil || err.Error() != long+": line 2: longer than 64 MiB (the limit): input too large" {
		t.Fatalf("long line: %v", err)
	}
}

// FuzzReadEdgeList: no edge list panics; an accepted one is acyclic and
// every parent index is a node.
func FuzzReadEdgeList(f *testing.F) {
	f.Add("a b\nb c\n# comment\n\nd,c\n")
	f.Add("a b\nb c\nc a\n")
	f.Add("a a\n")
	f.Add("x;y\tz\n")
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ReadEdgeList(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for c, ps := range g.Parents {
			for _, p := range ps {
				if p < 0 || p >= len(g.Nodes) || p == c {
					t.Fatalf("node %d has parent %d of %d nodes", c, p, len(g.Nodes))
				}
			}
		}
	})
}

// FuzzReadTable: no table panics; accepted rows are rectangular.
func FuzzReadTable(f *testing.F) {
	f.Add("1,2\n3,4\n")
	f.Add("1 2\n# x\n\nnan NA\n")
	f.Add("1;2\n3\n")
	f.Add("\ufeff1,,3\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadTable(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for _, r := range rows {
			if len(r) != len(rows[0]) {
				t.Fatalf("ragged rows %d and %d", len(r), len(rows[0]))
			}
		}
	})
}

// FuzzReadMatrixFile: a square matrix or an error, for .npy and text alike.
func FuzzReadMatrixFile(f *testing.F) {
	var b bytes.Buffer
	npy.Write(&b, 2, 2, []float64{1, 0.5, 0.5, 1})
	f.Add(b.Bytes())
	f.Add([]byte("1 0.5\n0.5 1\n"))
	f.Add([]byte("1 2 3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		data, n, err := readMatrix(in, "m")
		if err == nil && (len(data) != n*n || n == 0 && len(data) != 0) {
			t.Fatalf("%d values for side %d", len(data), n)
		}
	})
}
