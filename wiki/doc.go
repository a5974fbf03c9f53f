// Package wiki turns a label into a document: it reads WordNet 3.0 (synsets,
// lemmas, glosses, hypernyms), fetches Wikipedia articles from the MediaWiki
// API or an offline dump, and resolves a synset to the article describing it.
package wiki
