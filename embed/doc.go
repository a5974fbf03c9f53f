// Package embed owns doc2vec: the tokenizer, the vocabulary (min_count,
// down-sampling), training of PV-DBOW (optionally with skip-gram word
// vectors) and PV-DM with negative sampling on lock-free goroutines,
// inference of vectors for new documents, the model file format, and
// import/export of vectors in word2vec text and binary formats.
// docs/embed.md describes it for users, with the benchmark against gensim.
package embed
