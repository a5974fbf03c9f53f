package embed

import (
	"fmt"
	"hash/fnv"
)

// InferOptions control Infer. Zero fields take the model's training values
// (Epochs, Alpha, MinAlpha) and seed 0.
type InferOptions struct {
	Epochs          int
	Alpha, MinAlpha float64
	Seed            uint64
}

// Infer returns a vector for a new document, trained with the word vectors
// and output weights frozen: the document vector starts from a random
// vector derived from Seed and the words (so the same call gives the same
// vector), then gets Epochs passes over the words with the learning rate
// falling linearly from Alpha to MinAlpha, as gensim's infer_vector.
// Words not in the vocabulary are ignored; with none left the result is the
// initial random vector.
func (m *Model) Infer(words []string, o InferOptions) ([]float32, error) {
	if m.OutVecs == nil {
		return nil, fmt.Errorf("embed: model has no output weights (imported word vectors only): cannot infer; use MeanWordVector")
	}
	if o.Epochs == 0 {
		o.Epochs = m.Options.Epochs
	}
	if o.Alpha == 0 {
		o.Alpha, o.MinAlpha = m.Options.Alpha, m.Options.MinAlpha
	}
	if o.Epochs < 0 || o.Alpha < 0 || o.MinAlpha < 0 {
		return nil, fmt.Errorf("embed: infer: epochs %d, alpha %g, min alpha %g: want non-negative", o.Epochs, o.Alpha, o.MinAlpha)
	}
	ids := m.Vocab.encode(nil, words)
	h := fnv.New64a()
	for _, w := range words {
		h.Write([]byte(w))
		h.Write([]byte{0})
	}
	t := m.newTrainer()
	t.learnIn, t.learnOut = false, false
	t.rng = newRNG(o.Seed, 3, h.Sum64())
	d := m.Options.Dim
	v := make([]float32, d)
	for i := range v {
		v[i] = (t.rng.float32() - 0.5) / float32(d)
	}
	step := 0.0
	if o.Epochs > 1 {
		step = (o.Alpha - o.MinAlpha) / float64(o.Epochs-1)
	}
	for e := 0; e < o.Epochs; e++ {
		t.alpha = float32(o.Alpha - step*float64(e))
		t.document(ids, v, true)
	}
	return v, nil
}

// DocVector returns the trained vector of the document tagged tag (shared
// storage, do not modify), and false when no training document had it.
func (m *Model) DocVector(tag string) ([]float32, bool) {
	i, ok := m.tagIndex[tag]
	if !ok {
		return nil, false
	}
	d := m.Options.Dim
	return m.DocVecs[i*d : (i+1)*d], true
}

// WordVector returns the vector of word w (shared storage), and false when
// w is not in the vocabulary.
func (m *Model) WordVector(w string) ([]float32, bool) {
	i, ok := m.Vocab.ID(w)
	if !ok {
		return nil, false
	}
	d := m.Options.Dim
	return m.WordVecs[i*d : (i+1)*d], true
}

// MeanWordVector returns the mean of the vectors of the words that are in
// the vocabulary (each occurrence counts), and the number of such words; the
// vector is all zeros when there are none. It is the document vector used
// when a model has word vectors only (imported word2vec files).
func (m *Model) MeanWordVector(words []string) ([]float32, int) {
	d := m.Options.Dim
	v := make([]float32, d)
	n := 0
	for _, w := range words {
		if i, ok := m.Vocab.ID(w); ok {
			axpy(1, m.WordVecs[i*d:][:d], v)
			n++
		}
	}
	if n > 0 {
		scal(1/float32(n), v)
	}
	return v, n
}

// Vector returns the vector of a label's document: the trained document
// vector when tag was in the training corpus, otherwise an inferred one
// (or, for word-vector-only models, the mean word vector).
func (m *Model) Vector(tag string, words []string, o InferOptions) ([]float32, error) {
	if v, ok := m.DocVector(tag); ok {
		return append([]float32(nil), v...), nil
	}
	if m.OutVecs == nil {
		v, _ := m.MeanWordVector(words)
		return v, nil
	}
	return m.Infer(words, o)
}
