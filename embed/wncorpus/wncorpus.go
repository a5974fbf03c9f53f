// Package wncorpus builds lcl's default doc2vec corpus from WordNet: one
// document per noun synset (82,115 documents, about 1.27 M tokens), made of
// the synset's lemmas, definition and examples.
package wncorpus

import (
	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wordnet"
)

// SynsetText is a synset's own document: its line of wiki.WordNetDocument
// (lemmas, definition, examples) without the lines of its neighbours. The
// neighbours are left out on purpose: the corpus then holds each gloss once,
// and it is the corpus the quality figures in docs/embed.md were measured on.
func SynsetText(wn *wordnet.DB, s *wordnet.Synset) string {
	return wiki.WordNetLine(s)
}

// Documents returns the corpus in data.noun order, each document tagged
// with its synset's wnid and tokenized with embed.Tokenize.
func Documents(wn *wordnet.DB) []embed.Document {
	nouns := wn.Nouns()
	docs := make([]embed.Document, len(nouns))
	for i, s := range nouns {
		docs[i] = embed.Document{Tag: s.ID, Words: embed.Tokenize(SynsetText(wn, s))}
	}
	return docs
}
