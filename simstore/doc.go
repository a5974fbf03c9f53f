// Package simstore is lcl's Badger-backed store of articles, vectors,
// similarity matrices with provenance, and run results.
package simstore
