package cli

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/simstore"
)

func countMatrices(t *testing.T, dir string) int {
	t.Helper()
	s, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.List(context.Background(), simstore.KindMatrix)
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

func TestSimilarityComputeCacheForce(t *testing.T) {
	store := t.TempDir()
	r := cliRun(t, "--store", store, "similarity", "--synsets", "awa2", "--source", "visual")
	if r.code != 0 || !strings.Contains(r.out, "stored visual matrix of awa2 (50×50) as sim/awa2/visual/") {
		t.Fatalf("first run: %+v", r)
	}
	r2 := cliRun(t, "--store", store, "similarity", "--synsets", "awa2", "--source", "visual", "--missing", "mean")
	if r2.code != 0 || !strings.Contains(r2.out, "cache hit") {
		t.Fatalf("same inputs (default made explicit) is not a cache hit: %+v", r2)
	}
	r3 := cliRun(t, "--store", store, "similarity", "--synsets", "awa2", "--source", "visual", "--force")
	if r3.code != 0 || !strings.Contains(r3.out, "stored visual") {
		t.Fatalf("--force did not recompute: %+v", r3)
	}
	r4 := cliRun(t, "--store", store, "similarity", "--synsets", "awa2", "--source", "visual", "--missing", "zero")
	if r4.code != 0 || strings.Contains(r4.out, "cache hit") {
		t.Fatalf("different parameter hit the cache: %+v", r4)
	}
	if n := countMatrices(t, store); n != 2 {
		t.Errorf("%d matrices stored, want 2 (mean and zero)", n)
	}

	show := cliRun(t, "--store", store, "similarity", "show", "--synsets", "awa2", "--source", "visual", "--top", "2")
	if show.code != 0 {
		t.Fatalf("show: %+v", show)
	}
	var whale string
	for _, line := range strings.Split(show.out, "\n") {
		if strings.HasPrefix(line, "killer whale") {
			whale = line
		}
	}
	if !strings.Contains(whale, "(") || strings.Count(whale, "(") != 2 {
		t.Errorf("show: killer whale line %q, want two neighbours", whale)
	}

	cmp := cliRun(t, "--store", store, "similarity", "compare", "awa2/visual", "awa2/visual")
	if cmp.code != 0 || !strings.Contains(cmp.out, "spearman 1.0000 over 1225 class pairs") {
		t.Errorf("compare with itself: %+v", cmp)
	}

	dir := t.TempDir()
	pl := cliRun(t, "--store", store, "similarity", "plot", "awa2/visual", "-o", dir)
	if pl.code != 0 {
		t.Fatalf("plot: %+v", pl)
	}
	for _, f := range []string{"awa2-visual-heatmap.png", "awa2-visual-spectrum.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSimilarityBadInputStoresNothing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	row := strings.Repeat("0.5 ", 50)
	square49 := strings.Repeat(strings.Repeat("0.5 ", 49)+"\n", 49)
	nonSquare := strings.Repeat(row+"\n", 49)
	attrs := strings.Repeat("1 2 3\n", 20) + "1 2\n" + strings.Repeat("1 2 3\n", 29)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong class count", []string{"--synsets", "awa2", "--source", "matrix", "--file", write("m49.txt", square49)}, "49×49 but label set awa2 has 50 classes"},
		{"non-square", []string{"--synsets", "awa2", "--source", "matrix", "--file", write("m.txt", nonSquare)}, "49×50, not square"},
		{"short attribute row", []string{"--synsets", "awa2", "--source", "visual", "--attributes", write("a.txt", attrs)}, "a.txt:21: row 21 has 2 values, want 3"},
		{"cyclic hierarchy", []string{"--synsets", "awa2", "--source", "simrank", "--graph", write("g.txt", "antelope mammal\nmammal animal\nanimal antelope\n")}, "cycle"},
		{"unknown source", []string{"--synsets", "awa2", "--source", "nope"}, "unknown similarity source"},
		{"bad decay", []string{"--synsets", "nabirds", "--source", "simrank", "--decay", "1.5"}, "strictly between 0 and 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			r := cliRun(t, append([]string{"--store", store, "similarity"}, tc.args...)...)
			if r.code == 0 || !strings.Contains(r.err, tc.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", r.code, r.err, tc.want)
			}
			if n := countMatrices(t, store); n != 0 {
				t.Errorf("%d matrices stored after bad input", n)
			}
		})
	}
}

func TestSimilarityUsage(t *testing.T) {
	store := t.TempDir()
	if r := cliRun(t, "--store", store, "similarity", "--synsets", "awa2"); r.code != ExitUsage {
		t.Errorf("missing --source: exit %d, want %d", r.code, ExitUsage)
	}
	if r := cliRun(t, "--store", store, "similarity", "compare", "a"); r.code != ExitUsage {
		t.Errorf("compare with one matrix: exit %d, want %d", r.code, ExitUsage)
	}
	// A matrix not stored: the command that makes it, with the set and source.
	if r := cliRun(t, "--store", store, "similarity", "show", "awa2/visual"); r.code != ExitFailure || !strings.Contains(r.err, "not found (compute it with lcl similarity --synsets awa2 --source visual)") {
		t.Errorf("show of a matrix not stored: %+v", r)
	}
	if r := cliRun(t, "--store", store, "similarity", "show", "sim/awa2/visual/0123"); r.code != ExitFailure || !strings.Contains(r.err, "not found (the stored matrices: lcl store ls --kind matrix)") {
		t.Errorf("show of a key not stored: %+v", r)
	}
	if r := cliRun(t, "--store", store, "similarity", "--synsets", "awa2", "--source", "visual", "--max-memory", "lots"); r.code != ExitUsage || !strings.Contains(r.err, `--max-memory: "lots" is not a size`) {
		t.Errorf("--max-memory lots: %+v", r)
	}
}

// ImageNet-21k's lca matrix (1.9 GB) under a 1 GB limit is refused before
// anything is computed or stored, with the estimate and the flag.
func TestSimilarityMaxMemoryRefuses(t *testing.T) {
	needWordNet(t)
	store := t.TempDir()
	r := cliRun(t, "--store", store, "similarity", "--synsets", "imagenet21k", "--source", "lca", "--max-memory", "1GB")
	want := "lca: lca of 21843 classes (a 21843×21843 float32 matrix) needs about 1.9 GB, over the memory limit of 1.0 GB (--max-memory; default: this machine's memory)"
	if r.code != ExitFailure || !strings.Contains(r.err, want) {
		t.Fatalf("exit %d, stderr %q\nwant %q", r.code, r.err, want)
	}
	if r := cliRun(t, "--store", store, "store", "ls", "--all"); r.code != 0 || strings.Contains(r.out, "sim/") {
		t.Errorf("after the refusal the store holds %q", r.out)
	}
}

// The semantic source reads the vectors lcl embed stores; here they are put
// into the store directly, one orthogonal-ish vector per Fashion-MNIST class.
func TestSimilaritySemanticFromStoredVectors(t *testing.T) {
	store := t.TempDir()
	s, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	dim := 4
	data := make([]float32, len(ids)*dim)
	for i := range ids {
		data[i*dim+i%dim] = 1
		data[i*dim+(i+1)%dim] = 0.5
	}
	if err := s.PutVectors(context.Background(), simstore.Vectors{LabelSet: "fashion-mnist", Model: "test-model", IDs: ids, Dim: dim, Data: data}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := cliRun(t, "--store", store, "similarity", "--synsets", "fashion-mnist", "--source", "semantic")
	if r.code != 0 || !strings.Contains(r.out, "model=test-model") {
		t.Fatalf("semantic: %+v", r)
	}
	// Classes 0 and 4 have the same vector: each is the other's nearest.
	show := cliRun(t, "--store", store, "similarity", "show", "fashion-mnist/semantic", "--top", "1", "--json")
	if show.code != 0 || !strings.Contains(show.out, `"class":"T-shirt/top","index":0,"message_type":"neighbours","nearest":[{"class":"Coat","index":4,"similarity":1}]`) {
		t.Fatalf("show: %+v", show)
	}
	// Vectors of a named model are not built (lcl embed's flags choose
	// them): the error says how. (Without --model, missing vectors are
	// embedded: TestEmbedReusesCorpusModel.)
	if r := cliRun(t, "--store", store, "similarity", "--synsets", "cifar100", "--source", "semantic", "--model", "nosuch"); r.code == 0 || !strings.Contains(r.err, "lcl embed --synsets cifar100") {
		t.Errorf("no vectors of the named model: %+v", r)
	}
}

// A label set from a file in a folder: its name holds a slash, which must
// neither break SET/SOURCE lookups nor the plot file names.
func TestSimilarityFileLabelSet(t *testing.T) {
	store, dir := t.TempDir(), t.TempDir()
	sub := filepath.Join(dir, "sets")
	os.MkdirAll(sub, 0o755)
	file := filepath.Join(sub, "fish-and-cats.txt")
	os.WriteFile(file, []byte("tench\tn01440764\ngoldfish\tn01443537\ntabby\tn02123045\ntiger cat\tn02123159\n"), 0o644)
	if r := cliRun(t, "--store", store, "similarity", "--synsets", file, "--source", "lca"); r.code != 0 {
		t.Fatalf("compute: %+v", r)
	}
	show := cliRun(t, "--store", store, "similarity", "show", "--synsets", file, "--source", "lca", "--top", "1")
	if show.code != 0 || !strings.Contains(show.out, "tench      goldfish (0.941)") {
		t.Fatalf("show: %+v", show)
	}
	out := filepath.Join(dir, "plots")
	if r := cliRun(t, "--store", store, "similarity", "plot", "--synsets", file, "--source", "lca", "-o", out); r.code != 0 {
		t.Fatalf("plot: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(out, "fish-and-cats-lca-heatmap.png")); err != nil {
		t.Error(err)
	}
}

// A third-party similarity plugin (the lexical example, built here) computes
// a matrix that lcl similarity checks, stores with its provenance and finds
// again as a cache hit, like a built-in's; show and train's --source find it.
func TestSimilarityThirdPartyPlugin(t *testing.T) {
	needWordNet(t)
	plugins := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(plugins, "lcl-similarity-lexical"), "../../../../examples/lcl-similarity-lexical").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("LCL_PLUGIN_PATH", plugins)
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	set := filepath.Join(dir, "pets.txt")
	if err := os.WriteFile(set, []byte("cat\tn02121808\ncart\tn02970849\ndog\tn02084071\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cliRun(t, "--store", store, "similarity", "--synsets", set, "--source", "lexical")
	if r.code != 0 || !strings.Contains(r.out, "stored lexical matrix of "+set+" (3×3) as sim/") || !strings.Contains(r.out, `computed by similarity plugin "lexical"`) {
		t.Fatalf("first run: %+v", r)
	}
	if r := cliRun(t, "--store", store, "similarity", "--synsets", set, "--source", "lexical"); r.code != 0 || !strings.Contains(r.out, "cache hit: lexical matrix") {
		t.Fatalf("second run is not a cache hit: %+v", r)
	}
	if r := cliRun(t, "--store", store, "similarity", "--synsets", set, "--source", "lexical", "--param", "alpha=1"); r.code != 1 || !strings.Contains(r.err, "unknown parameter(s) alpha") {
		t.Errorf("a parameter the plugin does not declare: %+v", r)
	}
	st, err := simstore.Open(store, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.LatestMatrix(context.Background(), set, "lexical")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	// 1 − Levenshtein/longer name: cat–cart one insertion of four letters,
	// cat–dog three substitutions, cart–dog three and a deletion.
	want := []float32{1, 0.75, 0, 0.75, 1, 0, 0, 0, 1}
	for i, w := range want {
		if m.Data[i] != w {
			t.Fatalf("stored %v, want %v", m.Data, want)
		}
	}
	if p := m.Provenance; p.Source != "lexical" || !strings.HasPrefix(p.Inputs["plugin"], "0.1.0 sha256:") || p.Inputs["classes"] == "" {
		t.Errorf("provenance %+v", p)
	}
	if r := cliRun(t, "--store", store, "similarity", "show", "--synsets", set, "--source", "lexical", "--top", "1"); r.code != 0 || !strings.Contains(r.out, "cat    cart (0.750)") {
		t.Errorf("show: %+v", r)
	}
}
