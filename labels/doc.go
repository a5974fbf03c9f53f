// Package labels owns label sets: the built-in class lists of the paper's
// datasets (embedded in the binary) and user files, each class tied to a
// WordNet 3.0 noun synset where one exists.
package labels
