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
	if !strings.Contains(id, "dbow+words-d16-") || !strings.Contains(id, "-e5-seed3-corpus-") || !strings.HasSuffix(id, "-src-wordnet") {
		t.Errorf("model id %q does not encode the settings", id)
	}
	v := storedVectors(t, store, out["label_set"].(string), id)
	if !slices.Equal(v.IDs, []string{"n02119789", "n02119022", "n02123045"}) || v.Dim != 16 || len(v.Data) != 48 {
		t.Fatalf("stored ids %v dim %d len %d", v.IDs, v.Dim, len(v.Data))
	}
	// The class documents were trained with the corpus: the saved model
	// holds them under their wnids, and the stored rows are those vectors.
	m, err := embed.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range v.IDs {
		dv, ok := m.DocVector(id)
		if !ok || !slices.Equal(dv, v.Row(i)) {
			t.Errorf("class %s: stored vector is not the trained document vector", id)
		}
	}
	// Same seed, one worker: the same vectors again; --model reuses them.
	export := filepath.Join(dir, "classes.bin")
	r = cliRun(t, "--store", store, "--json", "embed", "--synsets", set, "--source", "wordnet", "--model", model, "--export", export)
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
		{[]string{"embed", "--synsets", set, "--source", "wordnet", "--corpus", corpus, "--epochs", "0"}, 1, "epochs 0"},
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
	if keys, err := s.List(context.Background(), simstore.KindVectors); err != nil || len(keys) != 0 {
		t.Errorf("after cancel the store holds %v (%v), want no vectors", keys, err)
	}
}
