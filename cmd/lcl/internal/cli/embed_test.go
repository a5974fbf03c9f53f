package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/simstore"
)

// embedFixture writes a three-class label file (kit fox, red fox, tabby
// cat) and a small corpus in which fox and cat documents use different
// words.
func embedFixture(t *testing.T) (dir, set, corpus string) {
	t.Helper()
	needWordNet(t)
	dir = t.TempDir()
	set = filepath.Join(dir, "foxes.txt")
	os.WriteFile(set, []byte("kit fox\tn02119789\nred fox\tn02119022\ntabby\tn02123045\n"), 0o644)
	var b strings.Builder
	for i := range 300 {
		if i%2 == 0 {
			fmt.Fprintf(&b, "fox%d\ta small fox with a bushy tail and pointed ears hunts at night fox den\n", i)
		} else {
			fmt.Fprintf(&b, "cat%d\ta domestic cat with soft fur and whiskers purrs and sleeps cat milk\n", i)
		}
	}
	corpus = filepath.Join(dir, "corpus.txt")
	os.WriteFile(corpus, []byte(b.String()), 0o644)
	return dir, set, corpus
}

func storedVectors(t *testing.T, store, set, model string) *simstore.Vectors {
	t.Helper()
	s, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.GetVectors(context.Background(), set, model)
	if err != nil {
		t.Fatalf("vectors %s/%s: %v", set, model, err)
	}
	return v
}

func embedJSON(t *testing.T, r cliResult) map[string]any {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.out)), &m); err != nil {
		t.Fatalf("output %q: %v", r.out, err)
	}
	return m
}

func TestEmbedCorpus(t *testing.T) {
	dir, set, corpus := embedFixture(t)
	store := filepath.Join(dir, "store")
	model := filepath.Join(dir, "m.d2v")
	r := cliRun(t, "--store", store, "--json", "embed", "--synsets", set, "--source", "wordnet", "--corpus", corpus,
		"--dim", "16", "--epochs", "5", "--workers", "1", "--seed", "3", "--save-model", model)
	out := embedJSON(t, r)
	id := out["model"].(string)
	if !strings.Contains(id, "dbow+words+shared-d16-") || !strings.Contains(id, "-e5-seed3-corpus-") || !strings.HasSuffix(id, "-src-wordnet") {
		t.Errorf("model id %q does not encode the settings", id)
	}
	v := storedVectors(t, store, out["label_set"].(string), id)
	if !slices.Equal(v.IDs, []string{"n02119789", "n02119022", "n02123045"}) || v.Dim != 16 || len(v.Data) != 48 {
		t.Fatalf("stored ids %v dim %d len %d", v.IDs, v.Dim, len(v.Data))
	}
	// The class documents are not in the corpus: --save-model saved the
	// corpus model alone, and the classes' vectors were inferred against it
	// (repeatably: the seed and the words fix the start).
	m, err := embed.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	if out["inferred"] != "3" || !strings.Contains(id, "-infer-e5-seed3-docs-") {
		t.Errorf("inferred %v, key %s; want 3 inferred vectors, named so", out["inferred"], id)
	}
	for _, id := range v.IDs {
		if _, ok := m.DocVector(id); ok {
			t.Errorf("class %s: the saved corpus model holds a class document", id)
		}
	}
	// --model with the same seed infers the same vectors again.
	export := filepath.Join(dir, "classes.bin")
	r = cliRun(t, "--store", store, "--json", "embed", "--synsets", set, "--source", "wordnet", "--model", model, "--seed", "3", "--export", export)
	out = embedJSON(t, r)
	v2 := storedVectors(t, store, out["label_set"].(string), out["model"].(string))
	if !slices.Equal(v2.Data, v.Data) {
		t.Error("--model: vectors differ from the trained ones")
	}
	// --export writes the class vectors as binary word2vec.
	w, bin, err := embed.LoadWord2Vec(export)
	if err != nil || !bin || !slices.Equal(w.Keys, v.IDs) || !slices.Equal(w.Data, v.Data) {
		t.Errorf("--export: binary=%v keys %v, %v; want the stored vectors", bin, w, err)
	}
}

func TestEmbedWord2Vec(t *testing.T) {
	dir, set, _ := embedFixture(t)
	store := filepath.Join(dir, "store")
	vecs := filepath.Join(dir, "v.txt")
	// The kit fox has its own key; the others get the mean of their
	// document's words (the red fox and tabby synsets' glosses contain "fox"
	// and "cat").
	os.WriteFile(vecs, []byte("3 2\nn02119789 9 9\nfox 1 0\ncat 0 1\n"), 0o644)
	r := cliRun(t, "--store", store, "--json", "embed", "--synsets", set, "--source", "wordnet", "--vectors", vecs)
	out := embedJSON(t, r)
	v := storedVectors(t, store, out["label_set"].(string), out["model"].(string))
	if !slices.Equal(v.Row(0), []float32{9, 9}) {
		t.Errorf("kit fox: %v, want its own key's vector [9 9]", v.Row(0))
	}
	if r := v.Row(1); r[0] <= r[1] {
		t.Errorf("red fox: %v, want mostly the fox vector", r)
	}
	if r := v.Row(2); r[1] <= r[0] {
		t.Errorf("tabby cat: %v, want mostly the cat vector", r)
	}
	// A malformed file names the line.
	os.WriteFile(vecs, []byte("3 2\nn02119789 9 9\nfox 1\n"), 0o644)
	r = cliRun(t, "--store", store, "embed", "--synsets", set, "--source", "wordnet", "--vectors", vecs)
	if r.code == 0 || !strings.Contains(r.err, "line 3") {
		t.Errorf("malformed vectors: exit %d, stderr %q; want an error naming line 3", r.code, r.err)
	}
}

func TestEmbedErrors(t *testing.T) {
	dir, set, corpus := embedFixture(t)
	store := filepath.Join(dir, "store")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"embed", "--synsets", set, "--mode", "cbow"}, 2, `--mode "cbow"`},
		{[]string{"embed", "--synsets", set, "--source", "web"}, 2, `--source "web"`},
		{[]string{"embed", "--synsets", set, "--corpus", corpus, "--vectors", corpus}, 2, "exclude each other"},
		{[]string{"embed", "--synsets", set, "--source", "api"}, 1, "no stored article"},
		// A setting out of range is a usage error naming the flag, found
		// before the corpus is read.
		{[]string{"embed", "--synsets", set, "--source", "wordnet", "--corpus", corpus, "--epochs", "0"}, 2, "--epochs 0: want a whole number from 1 to 1000000"},
		// Drawn at once per document: 10⁹ noise words per word would exhaust memory.
		{[]string{"embed", "--synsets", set, "--negative", "1000000000"}, 2, "--negative 1000000000: want a whole number from 1 to 1000"},
		{[]string{"embed", "--synsets", set, "--window", "0"}, 2, "--window 0: want a whole number from 1 to 1000"},
		{[]string{"embed", "--synsets", set, "--infer-epochs", "-1"}, 2, "--infer-epochs -1: want a whole number from 0 to 1000000"},
		{[]string{"embed", "--synsets", set, "--dim", "0"}, 2, "--dim 0: want 1 to 65536"},
		{[]string{"embed", "--synsets", set, "--min-alpha", "1"}, 2, "--min-alpha 1: want 0 ≤ min alpha ≤ --alpha (0.025)"},
		{[]string{"embed", "--synsets", set, "--mode", "dbw"}, 2, `--mode "dbw": want dbow or dm; did you mean dbow?`},
		// Numbers are finite, and the workers (goroutines) bounded.
		{[]string{"embed", "--synsets", set, "--alpha", "Inf"}, 2, "--alpha +Inf: want a finite value > 0"},
		{[]string{"embed", "--synsets", set, "--alpha", "NaN"}, 2, "--alpha NaN: want a finite value > 0"},
		{[]string{"embed", "--synsets", set, "--sample", "Inf"}, 2, "--sample +Inf: want a finite value ≥ 0"},
		{[]string{"embed", "--synsets", set, "--sample", "NaN"}, 2, "--sample NaN: want a finite value ≥ 0"},
		{[]string{"embed", "--synsets", set, "--min-alpha", "NaN"}, 2, "--min-alpha NaN: want 0 ≤ min alpha ≤ --alpha"},
		{[]string{"embed", "--synsets", set, "--workers", "100000000"}, 2, "--workers 100000000: want 1 to 1024"},
		{[]string{"embed", "--synsets", set, "--source", "wordnt"}, 2, "did you mean wordnet?"},
	}
	for _, tt := range tests {
		r := cliRun(t, append([]string{"--store", store}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.err, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tt.args, r.code, r.err, tt.code, tt.want)
		}
	}
}

func TestEmbedCancelled(t *testing.T) {
	dir, set, corpus := embedFixture(t)
	store := filepath.Join(dir, "store")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"--store", store, "embed", "--synsets", set, "--source", "wordnet", "--corpus", corpus},
		&IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != ExitCancelled {
		t.Errorf("exit %d (%s), want %d", code, errb.String(), ExitCancelled)
	}
	s, err := simstore.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, kind := range []string{simstore.KindVectors, simstore.KindModel} {
		if keys, err := s.List(context.Background(), kind); err != nil || len(keys) != 0 {
			t.Errorf("after cancel the store holds %v (%v), want no %s", keys, err, kind)
		}
	}
}

// The corpus model is trained by the first lcl embed and kept in the store;
// a second label set reuses it (no training: the JSON says so and has no
// training statistics), a class whose wnid tags a corpus document takes the
// trained vector, the others are inferred; and lcl similarity --source
// semantic embeds a third label set itself from the stored model.
func TestEmbedReusesCorpusModel(t *testing.T) {
	dir, set, corpus := embedFixture(t)
	raw, _ := os.ReadFile(corpus)
	os.WriteFile(corpus, append(raw, "n02119789\tkit fox small fox of the western plains with large ears\n"...), 0o644)
	store := filepath.Join(dir, "store")
	args := []string{"--store", store, "--json", "embed", "--source", "wordnet", "--corpus", corpus,
		"--dim", "16", "--epochs", "5", "--workers", "1", "--seed", "3"}
	first := embedJSON(t, cliRun(t, append(args, "--synsets", set)...))
	if first["corpus_model_trained"] != true || first["effective_words"] == nil || first["inferred"] != "2" {
		t.Fatalf("first embed: %v; want the corpus model trained, 2 classes inferred", first)
	}
	cats := filepath.Join(dir, "cats.txt")
	os.WriteFile(cats, []byte("kit fox\tn02119789\ntabby\tn02123045\n"), 0o644)
	second := embedJSON(t, cliRun(t, append(args, "--synsets", cats)...))
	if second["corpus_model_trained"] != false || second["effective_words"] != nil || second["corpus_model"] != first["corpus_model"] {
		t.Fatalf("second label set: %v; want the stored corpus model %v reused, no training", second, first["corpus_model"])
	}
	a := storedVectors(t, store, first["label_set"].(string), first["model"].(string))
	b := storedVectors(t, store, second["label_set"].(string), second["model"].(string))
	// The kit fox's document is in the corpus: the same trained vector in
	// both label sets; the tabby's inferred one is the same too (same
	// model, seed and words).
	if !slices.Equal(a.Row(0), b.Row(0)) || !slices.Equal(a.Row(2), b.Row(1)) {
		t.Errorf("the same class got different vectors in two label sets")
	}
	// lcl similarity --source semantic for a label set without vectors
	// embeds it from the stored corpus model, in one line saying so.
	dogs := filepath.Join(dir, "dogs.txt")
	os.WriteFile(dogs, []byte("red fox\tn02119022\ntabby\tn02123045\n"), 0o644)
	r := cliRun(t, "--store", store, "--json", "similarity", "--synsets", dogs, "--source", "semantic")
	if strings.Count(r.err, "embedded its classes with the stored corpus model") != 1 {
		t.Errorf("similarity without vectors: stderr %q; want one line saying it embedded them", r.err)
	}
	sim := embedJSON(t, r)
	params, _ := sim["params"].(map[string]any)
	if sim["cached"] != false || params == nil {
		t.Fatalf("similarity: %v", sim)
	}
	c := storedVectors(t, store, sim["label_set"].(string), params["model"].(string))
	if !slices.Equal(c.Row(1), a.Row(2)) || c.Meta["corpus_model"] != first["corpus_model"] {
		t.Errorf("vectors embedded by lcl similarity: meta %v; want the tabby's vector from %v", c.Meta, first["corpus_model"])
	}
	// So does a run (here lcl plan: trainrun's path, as lcl train's) on the
	// semantic source of a label set without vectors, before its plugin
	// computes the matrix; it names the strategy the similarity is for.
	birds := filepath.Join(dir, "birds.txt")
	os.WriteFile(birds, []byte("kit fox\tn02119789\nred fox\tn02119022\ntabby\tn02123045\n"), 0o644)
	r = cliRun(t, "--store", store, "plan", "--strategy", "lcl", "--synsets", birds, "--source", "semantic",
		"--epochs", "2", "--out", filepath.Join(dir, "plan"))
	if r.code != 0 || strings.Count(r.err, "lcl plan: no vectors of") != 1 ||
		!strings.Contains(r.err, "embedded its classes with the stored corpus model") ||
		!strings.Contains(r.err, `similarity from similarity plugin "semantic"`) {
		t.Errorf("lcl plan without vectors: exit %d, stderr %q; want the classes embedded, in one line, then the plugin's matrix", r.code, r.err)
	}
}

// lcl bench's number flags are range-checked before anything runs, one
// line naming the flag (a batch of -1 reached libtorch; --n -5 wrote a
// folder of nothing).
func TestBenchRefusesOutOfRange(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "jpegs")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "jpegs", "--out", out, "--n", "-5"}, "--n -5: want a whole number from 1 to 10000000"},
		{[]string{"bench", "jpegs", "--out", out, "--quality", "101"}, "--quality 101: want a whole number from 1 to 100"},
		{[]string{"bench", "jpegs", "--out", out, "--n", "3", "--classes", "4"}, "--classes 4: want a whole number from 1 to 3"},
		{[]string{"bench", "loader", "--data", "folder:" + out, "--batch", "0"}, "--batch 0: want a whole number from 1 to 1048576"},
		{[]string{"bench", "loader", "--data", "folder:" + out, "--workers", "100000"}, "--workers 100000: want a whole number from 0 to 1024"},
		{[]string{"bench", "step", "--batch", "-1"}, "--batch -1: want a whole number from 1 to 1048576"},
		{[]string{"bench", "step", "--steps", "0"}, "--steps 0: want a whole number from 1 to 1000000"},
		{[]string{"bench", "step", "--mixup", "NaN"}, "--mixup NaN: want a finite value"},
		{[]string{"bench", "step", "--threads", "5000"}, "--threads 5000: want a whole number from 0 to 1024"},
	} {
		r := cliRun(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.err, tt.want) || strings.Count(strings.TrimSpace(r.err), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tt.args, r.code, r.err, tt.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused bench jpegs left %s (stat: %v)", out, err)
	}
}
