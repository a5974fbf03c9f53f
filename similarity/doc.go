// Package similarity computes C×C class-similarity matrices for a label set
// from several sources (semantic, visual, simrank, lca, matrix), applies one
// normalisation policy to all of them, and provides the tools to inspect them
// (nearest neighbours, Spearman comparison, clustering order, spectrum). The
// lca source's LCA heights also serve as a Hierarchy: the costs of the
// hierarchy-aware evaluation metrics.
//
// A Source is data in, matrix out: it receives the label set (class ids,
// names, wnids, optional attributes) and string parameters, and returns a
// row-major float32 matrix with its provenance. Everything else a source needs
// (WordNet, the store's vectors, files named by parameters) it holds or reads
// itself, so the same contract can be served over a plugin protocol.
//
// Matrices are float32, as simstore keeps them: a 21,843-class matrix is
// 1.9 GB, and a source holds one copy of it. Sources compute each entry in
// float64 and round it once (SimRank on small graphs iterates in float64 and
// is exact to 1e-12; see SimRank).
package similarity
