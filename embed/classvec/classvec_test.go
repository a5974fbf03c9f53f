package classvec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
)

var pets = &labels.Set{Name: "pets", Classes: []labels.Class{{Index: 0, ID: "cat", WNID: "n02121808"}, {Index: 1, ID: "dog", WNID: "n02084071"}}}

func TestArticleDocs(t *testing.T) {
	arts := []simstore.Article{
		{ClassID: "cat", Source: "api", Title: "Cat", Text: "a cat"},
		{ClassID: "dog", Source: "dump", Title: "Dog", Text: "a dog"},
	}
	docs, src, err := ArticleDocs(pets, arts, "")
	if err != nil || src != "mixed" || docs[1].Tag != "class:dog" || docs[1].Title != "Dog" || docs[0].Text != "a cat" {
		t.Fatalf("any source: %+v %q %v", docs, src, err)
	}
	if _, _, err := ArticleDocs(pets, arts, "api"); err == nil || !strings.Contains(err.Error(), "1 of 2 classes of pets have no stored article from source api (first: dog)") {
		t.Errorf("api only: %v", err)
	}
	arts[0].Source = "dump"
	if _, src, err := ArticleDocs(pets, arts, "dump:/x/enwiki.xml.bz2"); err != nil || src != "dump:/x/enwiki.xml.bz2" {
		t.Errorf("a dump's articles for dump:PATH: %q %v", src, err)
	}
}

func TestReadCorpusAndWord2Vec(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.txt")
	os.WriteFile(corpus, []byte("cat\tthe cat sat\nno tag here\n"), 0o644)
	c, err := ReadCorpus(corpus)
	if err != nil || len(c.Docs) != 2 || c.Docs[0].Tag != "cat" || c.Docs[1].Tag != "line:2" || len(c.Name) != len("corpus-")+12 {
		t.Fatalf("%+v %v", c, err)
	}
	// dog has a key; cat's vector is the mean of its document's words.
	w2v := filepath.Join(dir, "v.txt")
	os.WriteFile(w2v, []byte("3 2\nn02084071 1 3\nsmall 0 2\nfurry 4 0\n"), 0o644)
	docs := []Doc{{Class: pets.Classes[0], Tag: "class:cat", Text: "small furry"}, {Class: pets.Classes[1], Tag: "class:dog", Text: "barks"}}
	v, err := FromWord2Vec(w2v, docs)
	if err != nil {
		t.Fatal(err)
	}
	if v.Data[1][0] != 1 || v.Data[1][1] != 3 || v.Data[0][0] != 2 || v.Data[0][1] != 1 || v.Meta["direct_keys"] != "1" || !strings.HasPrefix(v.Model, "w2v-") {
		t.Errorf("%+v", v)
	}
	docs[0].Text = "meows"
	if _, err := FromWord2Vec(w2v, docs); err == nil || !strings.Contains(err.Error(), "1 classes have no key and no word") {
		t.Errorf("a class with nothing to go on: %v", err)
	}
}

func TestDocumentsDigestIsLengthPrefixed(t *testing.T) {
	// The encoding by hand: uvarint length, then the bytes, for the tag,
	// the word count and every word.
	raw := []byte{1, 't', 2, 1, 'a', 2, 'b', 'c'}
	want := sha256.Sum256(raw)
	if got := DocumentsDigest([]embed.Document{{Tag: "t", Words: []string{"a", "bc"}}}); got != hex.EncodeToString(want[:]) {
		t.Errorf("digest %s, want %x", got, want)
	}
	a := DocumentsDigest([]embed.Document{{Tag: "t", Words: []string{"ab", "c"}}})
	b := DocumentsDigest([]embed.Document{{Tag: "t", Words: []string{"a", "bc"}}})
	c := DocumentsDigest([]embed.Document{{Tag: "t", Words: []string{"a"}}, {Tag: "bc"}})
	if a == b || b == c || a == c {
		t.Errorf("different document sets share a digest: %s %s %s", a, b, c)
	}
}

// tinyCorpus is a three-document corpus holding the cat's and the dog's
// WordNet documents, with options that train it in a moment, on one worker.
func tinyCorpus() (Corpus, embed.Options) {
	corpus := Corpus{Name: "tiny", About: "test", Docs: []embed.Document{
		{Tag: "n02121808", Words: strings.Fields("cat small furry feline pet that meows")},
		{Tag: "n02084071", Words: strings.Fields("dog domestic canine pet that barks")},
		{Tag: "x", Words: strings.Fields("a furry pet small canine feline domestic")},
	}}
	o := embed.DefaultOptions()
	o.Dim, o.Epochs, o.Workers, o.MinCount = 8, 2, 1, 1
	return corpus, o
}

// Two document sets over the same corpus and settings: the WordNet
// documents of the classes (already in the corpus under their wnids) and
// the classes' stored articles (added as class:ID documents). They train
// different vectors, so they must be stored under different keys; the
// same set again gives the same key and, with one worker, the same vectors.
func TestTrainKeyNamesTheDocumentSet(t *testing.T) {
	corpus, o := tinyCorpus()
	wordnetDocs := []Doc{{Class: pets.Classes[0], Tag: "n02121808"}, {Class: pets.Classes[1], Tag: "n02084071"}}
	articleDocs := []Doc{{Class: pets.Classes[0], Tag: "class:cat", Text: "cat small furry feline pet that meows"},
		{Class: pets.Classes[1], Tag: "class:dog", Text: "dog domestic canine pet that barks"}}
	train := func(docs []Doc) *Vectors {
		t.Helper()
		v, err := Train(context.Background(), corpus, docs, o, "")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b, a2 := train(wordnetDocs), train(articleDocs), train(wordnetDocs)
	ka, kb := a.Record(pets, "wordnet").Model, b.Record(pets, "wordnet").Model
	if ka == kb {
		t.Fatalf("two document sets (%s and %s documents) share the key %s", a.Meta["documents"], b.Meta["documents"], ka)
	}
	if a.Meta["documents"] != "3" || b.Meta["documents"] != "5" {
		t.Errorf("documents trained on: %s and %s, want 3 and 5", a.Meta["documents"], b.Meta["documents"])
	}
	if !strings.Contains(ka, "-tiny-docs-") || !strings.HasSuffix(ka, "-src-wordnet") {
		t.Errorf("key %q lacks the corpus, document digest or source", ka)
	}
	if a2.Record(pets, "wordnet").Model != ka {
		t.Errorf("the same document set gave another key")
	}
	for i := range a.Data {
		if !slices.Equal(a.Data[i], a2.Data[i]) {
			t.Errorf("one worker, same seed: class %d's vectors differ", i)
		}
	}
	if a.Meta["reproducible"] != "bit-identical (1 worker)" {
		t.Errorf("reproducible = %q", a.Meta["reproducible"])
	}
}

// The corpus model is trained once and kept in the store: a WordNet-gloss
// label set gets exactly the vectors (and key) that training the corpus
// with its documents gives, since they are already in the corpus; a second
// label set trains nothing (no progress event); documents not in the
// corpus are inferred, and their key names the corpus model.
func TestCorpusModelIsTrainedOnceAndReused(t *testing.T) {
	ctx := context.Background()
	corpus, o := tinyCorpus()
	events := 0
	o.Progress = func(embed.Progress) { events++ }
	store, err := simstore.Open("", simstore.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	wordnetDocs := []Doc{{Class: pets.Classes[0], Tag: "n02121808"}, {Class: pets.Classes[1], Tag: "n02084071"}}

	first, err := LoadOrTrainCorpusModel(ctx, store, corpus, o)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Trained || events == 0 {
		t.Fatalf("first call: trained %v, %d progress events; want a training", first.Trained, events)
	}
	fresh, err := Train(ctx, corpus, wordnetDocs, o, "")
	if err != nil {
		t.Fatal(err)
	}
	events = 0
	again, err := LoadOrTrainCorpusModel(ctx, store, corpus, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Trained || events != 0 || again.ID != first.ID {
		t.Fatalf("second call: trained %v, %d progress events, id %s (first %s); want the stored model, no training", again.Trained, events, again.ID, first.ID)
	}
	for name, cm := range map[string]*CorpusModel{"just trained": first, "from the store": again} {
		v, err := cm.Vectors(wordnetDocs, embed.InferOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v.Model != fresh.Model || v.Meta["inferred"] != "0" || v.Meta["corpus_model"] != "model/"+first.ID {
			t.Errorf("%s: key %s (meta %v), want %s as a fresh training of corpus and classes gives, from model/%s", name, v.Model, v.Meta, fresh.Model, first.ID)
		}
		for i := range fresh.Data {
			if !slices.Equal(v.Data[i], fresh.Data[i]) {
				t.Errorf("%s: class %d's vector differs from a fresh training with the same seed", name, i)
			}
		}
	}
	// Articles are not in the corpus: inferred against the stored model,
	// repeatably, under a key that names the corpus model and the documents.
	articles := []Doc{{Class: pets.Classes[0], Tag: "class:cat", Text: "a small furry pet"},
		{Class: pets.Classes[1], Tag: "class:dog", Text: "a domestic canine that barks"}}
	a, err := again.Vectors(articles, embed.InferOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := first.Infer(embed.Tokenize(articles[1].Text), embed.InferOptions{Seed: 1})
	if a.Meta["inferred"] != "2" || !strings.HasPrefix(a.Model, first.ID+"-infer-e2-seed1-docs-") || !slices.Equal(a.Data[1], want) {
		t.Errorf("articles: key %s, meta %v; want 2 inferred vectors under %s-infer-e2-seed1-docs-…", a.Model, a.Meta, first.ID)
	}
	// Other settings or another corpus are another model.
	o.Seed = 2
	if CorpusModelID(corpus, o) == first.ID {
		t.Error("another seed gave the same corpus model id")
	}
	o.Seed = 1
	o.Mode, o.DBOWWords, o.SharedNegatives = embed.DBOW, true, !o.SharedNegatives
	if id := CorpusModelID(corpus, o); id == first.ID || !strings.Contains(id+first.ID, "dbow+words+shared-") {
		t.Errorf("shared negatives on and off: ids %s and %s, want them apart, one naming dbow+words+shared", id, first.ID)
	}
	o.SharedNegatives = !o.SharedNegatives
	corpus.Docs = corpus.Docs[:2]
	if CorpusModelID(corpus, o) == first.ID {
		t.Error("another document set gave the same corpus model id")
	}
}

// A stored corpus model that does not add up is an error naming the record
// and how to retrain it, not a panic or a silent retraining.
func TestLoadCorpusModelDamaged(t *testing.T) {
	ctx := context.Background()
	store, err := simstore.Open("", simstore.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	hdr := []byte(`{"options":{"mode":"dbow","dim":2,"window":1,"negative":1,"min_count":1,"epochs":1,"alpha":0.025},"words":["a"],"counts":[1],"tags":["t"]}`)
	for _, c := range []struct {
		name  string
		parts []int
		data  []float32
		want  string
	}{
		{"two parts", []int{2, 2}, make([]float32, 4), "2 parts, want 3"},
		{"short document vectors", []int{2, 2, 1}, make([]float32, 5), "document vectors: 1 values"},
	} {
		if err := store.PutModel(ctx, simstore.Model{ID: "m", Header: hdr, Parts: c.parts, Data: c.data}); err != nil {
			t.Fatal(err)
		}
		_, err := LoadCorpusModel(ctx, store, "m")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "lcl store rm model/m") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := store.PutModel(ctx, simstore.Model{ID: "m", Header: hdr, Parts: []int{2, 2, 2}, Data: []float32{1, 2, 3, 4, 5, 6}}); err != nil {
		t.Fatal(err)
	}
	cm, err := LoadCorpusModel(ctx, store, "m")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := cm.DocVector("t"); !ok || !slices.Equal(v, []float32{5, 6}) {
		t.Errorf("document vector of t: %v %v", v, ok)
	}
}
