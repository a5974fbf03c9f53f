package similarity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

func builtin(t *testing.T, name string) *labels.Set {
	t.Helper()
	s, err := labels.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkPolicy(t *testing.T, r *Result) {
	t.Helper()
	c := r.N()
	for i := 0; i < c; i++ {
		if r.At(i, i) != 1 {
			t.Fatalf("s(%d,%d) = %v, want 1", i, i, r.At(i, i))
		}
		for j := 0; j < c; j++ {
			x := r.At(i, j)
			if x != r.At(j, i) || x < 0 || math.IsNaN(x) {
				t.Fatalf("s(%d,%d) = %v, s(%d,%d) = %v: want symmetric, finite, ≥ 0", i, j, x, j, i, r.At(j, i))
			}
		}
	}
}

func TestVisualAwA2SpotCheck(t *testing.T) {
	set := builtin(t, "awa2")
	res, err := Compute(context.Background(), Visual{}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.N() != 50 || len(res.Data) != 2500 {
		t.Fatalf("got %d classes, %d values; want 50×50", res.N(), len(res.Data))
	}
	checkPolicy(t, res)
	if res.Params["missing"] != MissingMean || res.Params["attributes"] != "continuous" {
		t.Errorf("effective params %v", res.Params)
	}
	byName := map[string]int{}
	for i, c := range set.Classes {
		byName[c.Name] = i
	}
	f, err := os.Open(filepath.Join("..", "testdata", "similarity", "awa2-visual-neighbours.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	checked := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 {
			t.Fatalf("bad fixture line %q", line)
		}
		i, ok := byName[parts[0]]
		k, err := strconv.Atoi(parts[1])
		if !ok || err != nil {
			t.Fatalf("bad fixture line %q", line)
		}
		allowed := map[string]bool{}
		for _, a := range strings.Split(parts[2], ",") {
			if _, ok := byName[a]; !ok {
				t.Fatalf("fixture names unknown class %q", a)
			}
			allowed[a] = true
		}
		for _, nb := range Nearest(res.Data, 50, i, k) {
			if name := set.Classes[nb.Index].Name; !allowed[name] {
				t.Errorf("%s: neighbour %s (%.3f) is not one of %s", parts[0], name, nb.Score, parts[2])
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d spot checks read", checked)
	}
}

func TestVisualMissingHandling(t *testing.T) {
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	nan := math.NaN()
	set.Attributes = map[string]*labels.Attributes{"continuous": {Values: [][]float64{{nan, 1}, {2, 0}, {4, 0}}}}
	for _, tc := range []struct {
		missing string
		want    float64 // s(a,b)
	}{
		// mean: a = (3, 1), b = (2, 0): cos = 6/(√10·2)
		{MissingMean, 6 / (math.Sqrt(10) * 2)},
		// zero: a = (0, 1), b = (2, 0): orthogonal
		{MissingZero, 0},
	} {
		res, err := Compute(context.Background(), Visual{}, set, map[string]string{"missing": tc.missing})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.At(0, 1); got != float64(float32(tc.want)) {
			t.Errorf("missing=%s: s(a,b) = %v, want %v", tc.missing, got, tc.want)
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "1 filled") {
			t.Errorf("missing=%s: notes %q do not report the fill", tc.missing, res.Notes)
		}
	}
}

func TestVisualAttributeFileErrors(t *testing.T) {
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"short row", "1 2 3\n4 5\n6 7 8\n", ":2: row 2 has 2 values, want 3"},
		{"short csv row", "1,2,3\n4,5,6\n7,8\n", ":3: row 3 has 2 values, want 3"},
		{"rows", "1 2\n3 4\n", "2 rows, but label set t has 3 classes"},
		{"text", "1 2\n3 x\n5 6\n", ":2: column 2: \"x\" is not a number"},
		{"zero row", "1 2\n0 0\n5 6\n", "row 2 (b) is all zeros"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			os.WriteFile(path, []byte(tc.text), 0o644)
			_, err := Compute(context.Background(), Visual{}, set, map[string]string{"attributes": path})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := Compute(context.Background(), Visual{}, set, map[string]string{"decay": "0.8"}); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
		t.Errorf("unknown parameter: err = %v", err)
	}
}

func TestNormalize(t *testing.T) {
	names := []string{"a", "b"}
	for _, tc := range []struct {
		name   string
		in     []float32
		want   []float32
		errHas string
		note   string
	}{
		{"symmetric", []float32{5, 0.5, 0.5, 1}, []float32{1, 0.5, 0.5, 1}, "", ""},
		{"asymmetric averaged", []float32{1, 0.2, 0.6, 1}, []float32{1, 0.4, 0.4, 1}, "", "asymmetry"},
		{"negative clamped", []float32{1, -0.3, -0.3, 1}, []float32{1, 0, 0, 1}, "", "negatives clamped: 1"},
		{"nan", []float32{1, float32(math.NaN()), 0, 1}, nil, "s(a, b) [row 0, column 1] is NaN", ""},
		{"inf", []float32{1, 0, float32(math.Inf(1)), 1}, nil, "s(b, a) [row 1, column 0] is +Inf", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes, err := Normalize(tc.in, names)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if tc.in[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", tc.in, tc.want)
				}
			}
			if got := strings.Join(notes, ";"); (tc.note == "") != (got == "") || !strings.Contains(got, tc.note) {
				t.Errorf("notes %q, want %q", got, tc.note)
			}
		})
	}
}

func writeNPY(t *testing.T, path string, data []float64, n int) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.Write(&b, n, n, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMatrixFileImport(t *testing.T) {
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	dir := t.TempDir()
	good := []float64{1, 0.2, 0.3, 0.2, 1, -0.1, 0.3, -0.1, 1}
	writeNPY(t, filepath.Join(dir, "good.npy"), good, 3)
	os.WriteFile(filepath.Join(dir, "good.csv"), []byte("1,0.2,0.3\n0.2,1,-0.1\n0.3,-0.1,1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "nonsquare.csv"), []byte("1,0.2\n0.2,1\n0.3,0.1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "two.txt"), []byte("1 0.2\n0.2 1\n"), 0o644)
	writeNPY(t, filepath.Join(dir, "two.npy"), []float64{1, 0, 0, 1}, 2)
	os.WriteFile(filepath.Join(dir, "nan.csv"), []byte("1,0.2,0.3\n0.2,1,nan\n0.3,0.1,1\n"), 0o644)
	for _, f := range []string{"good.npy", "good.csv"} {
		res, err := Compute(context.Background(), MatrixFile{}, set, map[string]string{"file": filepath.Join(dir, f)})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkPolicy(t, res)
		if res.At(0, 2) != float64(float32(0.3)) || res.At(1, 2) != 0 {
			t.Errorf("%s: s(a,c) = %v, s(b,c) = %v; want 0.3 and 0 (clamped)", f, res.At(0, 2), res.At(1, 2))
		}
		if res.Inputs["file"] == "" {
			t.Errorf("%s: no file digest in provenance", f)
		}
	}
	for _, tc := range []struct{ file, want string }{
		{"nonsquare.csv", "3×2, not square"},
		{"two.txt", "2×2 but label set t has 3 classes"},
		{"two.npy", "2×2 but label set t has 3 classes"},
		{"nan.csv", "s(b, c) [row 1, column 2] is NaN"},
		{"absent.csv", "no such file"},
	} {
		_, err := Compute(context.Background(), MatrixFile{}, set, map[string]string{"file": filepath.Join(dir, tc.file)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}

func TestSemanticFromStoredVectors(t *testing.T) {
	ctx := context.Background()
	st, err := simstore.Open("", simstore.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set := &labels.Set{Name: "toy", Classes: []labels.Class{{ID: "cat"}, {ID: "dog"}, {ID: "car"}}}
	// dog has two rows (two articles): its vector is their mean (1, 1, 0).
	old := simstore.Vectors{LabelSet: "toy", Model: "old", IDs: []string{"cat", "dog", "car"}, Dim: 3,
		Data: []float32{1, 0, 0, 1, 0, 0, 1, 0, 0}, CreatedAt: time.Now().Add(-time.Hour)}
	cur := simstore.Vectors{LabelSet: "toy", Model: "d2v-100", IDs: []string{"cat", "dog", "dog", "car"}, Dim: 3,
		Data: []float32{1, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1}, CreatedAt: time.Now()}
	for _, v := range []simstore.Vectors{old, cur} {
		if err := st.PutVectors(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	src := Semantic{Store: st}
	res, err := Compute(ctx, src, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Params["model"] != "d2v-100" {
		t.Errorf("model = %q, want the latest (d2v-100)", res.Params["model"])
	}
	if got, want := res.At(0, 1), 1/math.Sqrt2; math.Abs(got-want) > 1e-6 {
		t.Errorf("s(cat,dog) = %v, want %v (mean vector of dog's two rows)", got, want)
	}
	if res.At(0, 2) != 0 || res.At(1, 2) != 0 {
		t.Errorf("car is orthogonal: got %v, %v", res.At(0, 2), res.At(1, 2))
	}
	res, err = Compute(ctx, src, set, map[string]string{"model": "old"})
	if err != nil {
		t.Fatal(err)
	}
	if res.At(0, 2) != 1 {
		t.Errorf("model old: s(cat,car) = %v, want 1", res.At(0, 2))
	}
	p1, _ := src.Prepare(ctx, set, nil)
	p2, _ := src.Prepare(ctx, set, map[string]string{"model": "old"})
	if p1.Inputs["vectors"] == p2.Inputs["vectors"] {
		t.Error("different vectors have the same input digest")
	}
	// Errors: a class without a vector, an unknown model, no vectors at all.
	bigger := &labels.Set{Name: "toy", Classes: append(set.Classes, labels.Class{ID: "bus"})}
	if _, err := Compute(ctx, src, bigger, nil); err == nil || !strings.Contains(err.Error(), "no row for class(es) bus") {
		t.Errorf("missing class: err = %v", err)
	}
	if _, err := Compute(ctx, src, set, map[string]string{"model": "nope"}); err == nil || !strings.Contains(err.Error(), "lcl embed") {
		t.Errorf("unknown model: err = %v", err)
	}
	other := &labels.Set{Name: "other", Classes: set.Classes}
	if _, err := Compute(ctx, src, other, nil); err == nil || !strings.Contains(err.Error(), "no vectors for label set other") {
		t.Errorf("no vectors: err = %v", err)
	}
}

func TestLCAOnTreeByHand(t *testing.T) {
	// r → a → {a1, a2}; r → b → b1 → b11; r → c. Root depth 1 (nltk).
	g := mustEdges(t, "a r\nb r\nc r\na1 a\na2 a\nb1 b\nb11 b1\n")
	set := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a1"}, {ID: "a2"}, {ID: "b11"}, {ID: "c"}}}
	idx, err := g.ClassNodes(set)
	if err != nil {
		t.Fatal(err)
	}
	wupE, _ := newLCAEngine(g, idx, lcaGraphWuPalmer, nil)
	heightE, _ := newLCAEngine(g, idx, lcaHeight, nil)
	wup := func(i, j int) (float64, error) { return wupE.pair(i, j), nil }
	height := func(i, j int) (float64, error) { return heightE.pair(i, j), nil }
	// depths: r 1, a 2, a1 3, b11 4, c 2. Heights: a1 0, a 1, b 2, r 3 (H = 3).
	for _, tc := range []struct {
		i, j       int
		wup, hsims float64
	}{
		{0, 1, 2.0 * 2 / (3 + 3), 1 - 1.0/3}, // LCA a
		{0, 2, 2.0 * 1 / (3 + 4), 0},         // LCA r
		{0, 3, 2.0 * 1 / (3 + 2), 0},         // LCA r
		{0, 0, 1, 1},
	} {
		if got, _ := wup(tc.i, tc.j); math.Abs(got-tc.wup) > 1e-12 {
			t.Errorf("wup(%s,%s) = %v, want %v", set.Classes[tc.i].ID, set.Classes[tc.j].ID, got, tc.wup)
		}
		if got, _ := height(tc.i, tc.j); math.Abs(got-tc.hsims) > 1e-12 {
			t.Errorf("height(%s,%s) = %v, want %v", set.Classes[tc.i].ID, set.Classes[tc.j].ID, got, tc.hsims)
		}
	}
}

func TestLCAWordNetIsNLTKWuPalmer(t *testing.T) {
	wn := openWordNet(t)
	set := builtin(t, "cifar100")
	src := LCA{WordNet: func() (*wordnet.DB, error) { return wn, nil }}
	res, err := Compute(context.Background(), src, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, res)
	for _, p := range [][2]int{{0, 1}, {3, 97}, {15, 42}, {55, 72}} {
		want, err := wn.WuPalmer(set.Classes[p[0]].WNID, set.Classes[p[1]].WNID)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.At(p[0], p[1]); got != float64(float32(want)) {
			t.Errorf("lca(%s,%s) = %v, want WuPalmer %v", set.Classes[p[0]].Name, set.Classes[p[1]].Name, got, want)
		}
	}
	h, err := Compute(context.Background(), src, set, map[string]string{"form": "height"})
	if err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, h)
	if rho, _ := Spearman(UpperTriangle(h.Data, 100), UpperTriangle(res.Data, 100)); !(rho > 0.5) {
		t.Errorf("height vs wup spearman %v: both measure LCA depth, want > 0.5", rho)
	}
}

func TestSimRankSourceNABirdsAndCycle(t *testing.T) {
	set := builtin(t, "nabirds")
	res, err := Compute(context.Background(), SimRankSource{}, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, res)
	if res.N() != 555 || res.Params["graph"] != GraphHierarchy || res.Params["decay"] != "0.8" {
		t.Errorf("N %d params %v", res.N(), res.Params)
	}
	dir := t.TempDir()
	cyc := filepath.Join(dir, "cyc.txt")
	os.WriteFile(cyc, []byte("a b\nb c\nc a\n"), 0o644)
	small := &labels.Set{Name: "t", Classes: []labels.Class{{ID: "a"}, {ID: "b"}}}
	if _, err := Compute(context.Background(), SimRankSource{}, small, map[string]string{"graph": cyc}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cyclic graph: err = %v", err)
	}
	missing := filepath.Join(dir, "tree.txt")
	os.WriteFile(missing, []byte("a r\n"), 0o644)
	if _, err := Compute(context.Background(), SimRankSource{}, small, map[string]string{"graph": missing}); err == nil || !strings.Contains(err.Error(), "class 1 (b) is not a node") {
		t.Errorf("class not in graph: err = %v", err)
	}
}

func TestSpearman(t *testing.T) {
	for _, tc := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 8, 27, 64, 125}, 1}, // monotone, not linear
		// ties: ranks x = 1, 2.5, 2.5, 4; y = 1..4: Σdxdy = 4.5, Σdx² = 4.5, Σdy² = 5
		{[]float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, 4.5 / math.Sqrt(4.5*5)},
	} {
		got, err := Spearman(tc.x, tc.y)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Spearman(%v, %v) = %v, %v; want %v", tc.x, tc.y, got, err, tc.want)
		}
	}
	if _, err := Spearman([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("length mismatch accepted")
	}
}

func TestClusterOrderGroupsBlocks(t *testing.T) {
	// Classes 0,2,4 are alike, 1,3 are alike; the two groups are far apart.
	c := 5
	data := make([]float64, c*c)
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			switch {
			case i == j:
				data[i*c+j] = 1
			case i%2 == j%2:
				data[i*c+j] = 0.9
			default:
				data[i*c+j] = 0.1
			}
		}
	}
	order := ClusterOrder(data, c)
	pos := map[int]int{}
	for p, i := range order {
		pos[i] = p
	}
	if len(order) != c {
		t.Fatalf("order %v", order)
	}
	even := []int{pos[0], pos[2], pos[4]}
	if lo, hi := min(even[0], even[1], even[2]), max(even[0], even[1], even[2]); hi-lo != 2 {
		t.Errorf("order %v splits the group {0,2,4}", order)
	}
}

func TestEigenvalues(t *testing.T) {
	// [[1 a][a 1]] has eigenvalues 1+a, 1−a.
	eig, err := Eigenvalues([]float64{1, 0.25, 0.25, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eig[0]-1.25) > 1e-12 || math.Abs(eig[1]-0.75) > 1e-12 {
		t.Errorf("eigenvalues %v, want [1.25 0.75]", eig)
	}
}

// A float32, Fortran-order .npy as numpy writes it: column-major values.
func TestReadNPYFloat32FortranOrder(t *testing.T) {
	hdr := "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }"
	hdr += strings.Repeat(" ", 64-(10+len(hdr)+1)%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	// matrix [[1, 0.25], [0.5, 1]] stored column by column
	binary.Write(&b, binary.LittleEndian, []float32{1, 0.5, 0.25, 1})
	path := filepath.Join(t.TempDir(), "m.npy")
	os.WriteFile(path, b.Bytes(), 0o644)
	data, n, err := ReadMatrixFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || data[1] != 0.25 || data[2] != 0.5 {
		t.Fatalf("got %v (n %d), want [1 0.25 0.5 1]", data, n)
	}
	os.WriteFile(path, []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<i8'}"), 0o644)
	if _, _, err := ReadMatrixFile(path); err == nil {
		t.Error("unsupported header accepted")
	}
}
