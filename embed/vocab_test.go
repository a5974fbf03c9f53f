package embed

import (
	"math"
	"slices"
	"testing"
)

func TestBuildVocab(t *testing.T) {
	docs := [][]string{
		{"the", "cat", "sat", "on", "the", "mat"},
		{"the", "dog", "sat"},
		{"a", "cat", "and", "a", "dog", "and", "the", "bird"},
	}
	tests := []struct {
		minCount   int
		wantWords  []string
		wantCounts []int64
	}{
		// Ties keep first-occurrence order: cat, sat before dog, a, and.
		{1, []string{"the", "cat", "sat", "dog", "a", "and", "on", "mat", "bird"}, []int64{4, 2, 2, 2, 2, 2, 1, 1, 1}},
		{2, []string{"the", "cat", "sat", "dog", "a", "and"}, []int64{4, 2, 2, 2, 2, 2}},
		{3, []string{"the"}, []int64{4}},
		{5, nil, nil},
	}
	for _, tt := range tests {
		v := BuildVocab(docs, tt.minCount, 0)
		if !slices.Equal(v.Words, tt.wantWords) || !slices.Equal(v.Counts, tt.wantCounts) {
			t.Errorf("minCount %d: %v %v, want %v %v", tt.minCount, v.Words, v.Counts, tt.wantWords, tt.wantCounts)
		}
		for i, w := range v.Words {
			if id, ok := v.ID(w); !ok || id != i {
				t.Errorf("ID(%q) = %d, %v; want %d", w, id, ok, i)
			}
		}
		if _, ok := v.ID("zebra"); ok {
			t.Error("ID of an unknown word reported ok")
		}
	}
}

func TestDownsampling(t *testing.T) {
	// One word with count 1000, one with 10; total 1010. With sample
	// 1e-2 the threshold is 10.1: gensim keeps a word of count c with
	// probability (sqrt(c/t)+1)·t/c.
	docs := [][]string{}
	for range 1000 {
		docs = append(docs, []string{"common"})
	}
	for range 10 {
		docs = append(docs, []string{"rare"})
	}
	tt := 1e-2 * 1010
	tests := []struct {
		sample float64
		word   string
		want   float64
	}{
		{1e-2, "common", (math.Sqrt(1000/tt) + 1) * tt / 1000},
		{1e-2, "rare", 1},
		{0, "common", 1},
		{5, "common", (math.Sqrt(1000/(5*(3+math.Sqrt(5))/2)) + 1) * (5 * (3 + math.Sqrt(5)) / 2) / 1000},
	}
	for _, tc := range tests {
		v := BuildVocab(docs, 1, tc.sample)
		id, _ := v.ID(tc.word)
		if got := v.KeepProbability(id); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("sample %g, %s: keep %g, want %g", tc.sample, tc.word, got, tc.want)
		}
	}
}

func TestNegativeTable(t *testing.T) {
	tests := [][]int64{
		{1},
		{5, 5},
		{1000, 100, 10, 1},
		{7, 3, 3, 2, 1, 1, 1, 1, 1},
	}
	for _, counts := range tests {
		nt, err := NewNegativeTable(counts, 0.75)
		if err != nil {
			t.Fatal(err)
		}
		var z float64
		for _, c := range counts {
			z += math.Pow(float64(c), 0.75)
		}
		got := nt.Probabilities()
		for i, c := range counts {
			if want := math.Pow(float64(c), 0.75) / z; math.Abs(got[i]-want) > 1e-8 {
				t.Errorf("counts %v: p[%d] = %g, want %g", counts, i, got[i], want)
			}
		}
		// Draws follow the same distribution.
		r := newRNG(7)
		hits := make([]float64, len(counts))
		const n = 200000
		for range n {
			hits[nt.draw(r.next())]++
		}
		for i := range counts {
			want := math.Pow(float64(counts[i]), 0.75) / z
			if sd := math.Sqrt(want * (1 - want) / n); math.Abs(hits[i]/n-want) > 5*sd+1e-9 {
				t.Errorf("counts %v: word %d drawn %.4f of the time, want %.4f", counts, i, hits[i]/n, want)
			}
		}
	}
	if _, err := NewNegativeTable(nil, 0.75); err == nil {
		t.Error("empty counts: no error")
	}
}
