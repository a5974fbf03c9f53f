// Package similarity computes C×C class-similarity matrices for a label set
// from several sources (semantic, visual, simrank, lca, matrix), applies one
// normalisation policy to all of them, and provides the tools to inspect them
// (nearest neighbours, Spearman comparison, clustering order, spectrum).
//
// A Source is data in, matrix out: it receives the label set (class ids,
// names, wnids, optional attributes) and string parameters, and returns a
// row-major float64 matrix with its provenance. Everything else a source needs
// (WordNet, the store's vectors, files named by parameters) it holds or reads
// itself, so the same contract can be served over a plugin protocol.
//
// Matrices are float64 while computed and float32 once stored in simstore.
package similarity
