package classvec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// articleList is a store holding arts.
type articleList []simstore.Article

func (a articleList) ListArticles(_ context.Context, set string) ([]simstore.Article, error) {
	var out []simstore.Article
	for _, x := range a {
		if x.LabelSet == set {
			out = append(out, x)
		}
	}
	return out, nil
}

// Each source reads what it names and opens nothing else; auto falls back
// to WordNet when the set has no stored articles.
func TestDocuments(t *testing.T) {
	ctx := context.Background()
	wn := wordnet.New(&wordnet.Synset{ID: "n02121808", Lemmas: []string{"cat"}, Gloss: "a small feline"},
		&wordnet.Synset{ID: "n02084071", Lemmas: []string{"dog"}, Gloss: "a canine"})
	stored := articleList{
		{LabelSet: "pets", ClassID: "cat", Source: "api", Title: "Cat", Text: "a cat"},
		{LabelSet: "pets", ClassID: "dog", Source: "api", Title: "Dog", Text: "a dog"},
	}
	noStore := errors.New("no store")
	for _, c := range []struct {
		source   string
		store    articleList // nil: opening the store fails
		wantSrc  string
		wantTag  string // of the first document
		wantErr  bool
		wordNets int // times WordNet was opened
	}{
		{"api", stored, "api", "class:cat", false, 0},
		{"auto", stored, "api", "class:cat", false, 0},
		{"auto", articleList{}, "wordnet", "n02121808", false, 1},
		{"wordnet", nil, "wordnet", "n02121808", false, 1},
		{"dump", stored, "", "", true, 0}, // no article from a dump
		{"api", nil, "", "", true, 0},     // the store does not open
		{"web", stored, "", "", true, 0},
	} {
		opened := 0
		docs, src, err := Documents(ctx, pets, c.source,
			func() (ArticleStore, error) {
				if c.store == nil {
					return nil, noStore
				}
				return c.store, nil
			},
			func() (*wordnet.DB, error) { opened++; return wn, nil })
		if (err != nil) != c.wantErr || src != c.wantSrc || opened != c.wordNets || (err == nil && (len(docs) != 2 || docs[0].Tag != c.wantTag)) {
			t.Errorf("source %s: %d docs %+v, %q, %v; WordNet opened %d times", c.source, len(docs), docs, src, err, opened)
		}
	}
	for s, want := range map[string]bool{"auto": true, "wordnet": true, "api": true, "dump": true, "dump:/x.bz2": true, "dir:/x": false, "": false} {
		if IsDocSource(s) != want {
			t.Errorf("IsDocSource(%q) = %v", s, !want)
		}
	}
}

func TestRecord(t *testing.T) {
	v := &Vectors{Data: [][]float32{{1, 2}, {3, 4}}, Model: "doc2vec-d2", Meta: map[string]string{"corpus": "wordnet-nouns"}}
	for source, model := range map[string]string{"api": "doc2vec-d2-src-api", "dump:/data/en.xml.bz2": "doc2vec-d2-src-dump--data-en.xml.bz2"} {
		r := v.Record(pets, source)
		if r.LabelSet != "pets" || r.Model != model || r.Dim != 2 || !slices.Equal(r.IDs, []string{"cat", "dog"}) ||
			!slices.Equal(r.Data, []float32{1, 2, 3, 4}) || r.Meta["source"] != source || r.Meta["corpus"] != "wordnet-nouns" {
			t.Errorf("%s: %+v", source, r)
		}
	}
	if len(v.Meta) != 1 {
		t.Errorf("Record changed the vectors' facts: %v", v.Meta)
	}
}

func TestOpenCorpus(t *testing.T) {
	wn := wordnet.New(&wordnet.Synset{ID: "n02121808", Lemmas: []string{"cat"}, Gloss: "a small feline"})
	opened := 0
	open := func() (*wordnet.DB, error) { opened++; return wn, nil }
	c, err := OpenCorpus("", open)
	if err != nil || c.Name != "wordnet-nouns" || len(c.Docs) != len(wn.Nouns()) || opened != 1 {
		t.Errorf("WordNet corpus: %+v %v (opened %d)", c, err, opened)
	}
	file := filepath.Join(t.TempDir(), "c.txt")
	if err := os.WriteFile(file, []byte("a\tthe cat sat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := ReadCorpus(file)
	c, err = OpenCorpus(file, open)
	if err != nil || c.Name != want.Name || len(c.Docs) != 1 || opened != 1 {
		t.Errorf("corpus file: %+v %v (WordNet opened %d times)", c, err, opened)
	}
}
