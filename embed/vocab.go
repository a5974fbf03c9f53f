package embed

import (
	"math"
	"sort"
)

// Vocab is the word vocabulary of a model: the words kept by min_count,
// most frequent first, with their corpus counts and down-sampling
// thresholds.
type Vocab struct {
	Words  []string
	Counts []int64
	index  map[string]int32
	// keep[i] is the probability, scaled to 2^32-1, that an occurrence of
	// word i survives frequent-word down-sampling (gensim's sample_int).
	keep []uint32
}

// BuildVocab counts the words of docs and keeps those occurring at least
// minCount times, ordered by descending count (ties in order of first
// occurrence, so the order is deterministic). sample is the
// down-sampling threshold as in word2vec and gensim: with t = sample × (total
// count of kept words), an occurrence of a word with count c is kept with
// probability min(1, (√(c/t) + 1)·t/c); sample 0 disables down-sampling.
func BuildVocab(docs [][]string, minCount int, sample float64) *Vocab {
	counts := make(map[string]int64)
	var order []string
	for _, d := range docs {
		for _, w := range d {
			c, ok := counts[w]
			if !ok {
				order = append(order, w)
			}
			counts[w] = c + 1
		}
	}
	v := &Vocab{}
	for _, w := range order {
		if counts[w] >= int64(max(minCount, 1)) {
			v.Words = append(v.Words, w)
		}
	}
	sort.SliceStable(v.Words, func(i, j int) bool { return counts[v.Words[i]] > counts[v.Words[j]] })
	v.Counts = make([]int64, len(v.Words))
	for i, w := range v.Words {
		v.Counts[i] = counts[w]
	}
	v.finish(sample)
	return v
}

// newVocab rebuilds a vocabulary from stored words and counts.
func newVocab(words []string, counts []int64, sample float64) *Vocab {
	v := &Vocab{Words: words, Counts: counts}
	v.finish(sample)
	return v
}

func (v *Vocab) finish(sample float64) {
	v.index = make(map[string]int32, len(v.Words))
	for i, w := range v.Words {
		v.index[w] = int32(i)
	}
	var total float64
	for _, c := range v.Counts {
		total += float64(c)
	}
	// Same formula as gensim 4 (Word2Vec.prepare_vocab): for sample ≥ 1 it
	// is read as an absolute count.
	threshold := total
	switch {
	case sample <= 0:
	case sample < 1:
		threshold = sample * total
	default:
		threshold = sample * (3 + math.Sqrt(5)) / 2
	}
	v.keep = make([]uint32, len(v.Words))
	for i, c := range v.Counts {
		p := 1.0
		if sample > 0 {
			p = (math.Sqrt(float64(c)/threshold) + 1) * threshold / float64(c)
		}
		v.keep[i] = uint32(min(p, 1) * math.MaxUint32)
	}
}

// Len returns the number of words.
func (v *Vocab) Len() int { return len(v.Words) }

// ID returns the index of word w, and false when w is not in the vocabulary.
func (v *Vocab) ID(w string) (int, bool) {
	i, ok := v.index[w]
	return int(i), ok
}

// KeepProbability returns the probability that one occurrence of word i
// survives down-sampling.
func (v *Vocab) KeepProbability(i int) float64 {
	return float64(v.keep[i]) / math.MaxUint32
}

// encode appends the vocabulary ids of words to dst, skipping unknown words.
func (v *Vocab) encode(dst []int32, words []string) []int32 {
	for _, w := range words {
		if i, ok := v.index[w]; ok {
			dst = append(dst, i)
		}
	}
	return dst
}
