package classvec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
