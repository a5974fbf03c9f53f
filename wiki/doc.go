// Package wiki turns a class into a document: it fetches Wikipedia articles
// from the MediaWiki API or an offline dump, resolves a WordNet synset to the
// article describing it, builds documents from WordNet or the user's files,
// and fetches the documents of a whole label set into the store (OpenSource
// names a source, Fetch runs the resumable worker pool).
package wiki
