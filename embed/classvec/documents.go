package classvec

import (
	"context"
	"fmt"
	"strings"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// ArticleStore lists a label set's stored articles (*simstore.Store).
type ArticleStore interface {
	ListArticles(ctx context.Context, labelSet string) ([]simstore.Article, error)
}

// IsDocSource reports whether source names where class documents come
// from: auto, wordnet, api, dump or dump:PATH (see Documents).
func IsDocSource(source string) bool {
	switch source {
	case "auto", "wordnet", "api", "dump":
		return true
	}
	return strings.HasPrefix(source, "dump:")
}

// Documents are the document of every class of set, in class order, and
// the source they came from. source "wordnet" takes WordNetDocs; "api",
// "dump" and "dump:PATH" the stored articles of that source (ArticleDocs);
// "auto" the stored articles when the set has any, else WordNet. The store
// and WordNet are opened through store and wn, only when read.
func Documents(ctx context.Context, set *labels.Set, source string, store func() (ArticleStore, error), wn func() (*wordnet.DB, error)) ([]Doc, string, error) {
	articles := func(want string) ([]Doc, string, error) {
		s, err := store()
		if err != nil {
			return nil, "", err
		}
		arts, err := s.ListArticles(ctx, set.Name)
		if err != nil || (want == "" && len(arts) == 0) {
			return nil, "", err
		}
		return ArticleDocs(set, arts, want)
	}
	wordNet := func() ([]Doc, string, error) {
		db, err := wn()
		if err != nil {
			return nil, "", err
		}
		docs, err := WordNetDocs(db, set)
		return docs, "wordnet", err
	}
	switch {
	case source == "auto":
		docs, src, err := articles("")
		if err != nil || docs != nil {
			return docs, src, err
		}
		return wordNet()
	case source == "wordnet":
		return wordNet()
	case IsDocSource(source):
		return articles(source)
	}
	return nil, "", fmt.Errorf("document source %q: want auto, wordnet, api, dump or dump:PATH", source)
}

// Record is the store record of v, the vectors of set's classes from
// documents of source: named by the model id and the source (…-src-api,
// …-src-dump-PATH), with the source among the facts stored with them.
func (v *Vectors) Record(set *labels.Set, source string) simstore.Vectors {
	model := v.Model + "-src-" + strings.NewReplacer(":", "-", "/", "-").Replace(source)
	meta := map[string]string{"source": source}
	for k, x := range v.Meta {
		meta[k] = x
	}
	out := simstore.Vectors{LabelSet: set.Name, Model: model, Dim: len(v.Data[0]), Meta: meta}
	for i, c := range set.Classes {
		out.IDs = append(out.IDs, c.ID)
		out.Data = append(out.Data, v.Data[i]...)
	}
	return out
}

// OpenCorpus is the corpus doc2vec trains on besides the class documents:
// the corpus file at path (ReadCorpus), or WordNet's nouns (WordNetCorpus,
// WordNet opened through wn) when path is "".
func OpenCorpus(path string, wn func() (*wordnet.DB, error)) (Corpus, error) {
	if path != "" {
		return ReadCorpus(path)
	}
	db, err := wn()
	if err != nil {
		return Corpus{}, err
	}
	return WordNetCorpus(db), nil
}
