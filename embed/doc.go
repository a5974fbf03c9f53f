// Package embed owns doc2vec (PV-DBOW and PV-DM with negative sampling),
// inference of vectors for new documents, and import/export of pretrained
// vectors in word2vec formats.
package embed
