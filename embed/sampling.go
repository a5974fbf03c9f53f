package embed

import (
	"fmt"
	"math"
	"math/bits"
)

// rng is wyrand: one multiply per 64 random bits, good enough statistically
// for sampling and cheap enough for the inner loops. Each training job and
// each inference call owns one, seeded from the user's seed, so runs with one
// worker are repeatable.
type rng struct{ s uint64 }

func newRNG(seed uint64, stream ...uint64) rng {
	r := rng{s: seed ^ 0x9e3779b97f4a7c15}
	for _, x := range stream {
		r.s ^= x * 0xbf58476d1ce4e5b9
		r.next()
	}
	return r
}

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// intn returns a uniform value in [0, n) for small n.
func (r *rng) intn(n int) int {
	return int((uint64(uint32(r.next())) * uint64(n)) >> 32)
}

// float32 returns a uniform value in [0, 1).
func (r *rng) float32() float32 {
	return float32(r.next()>>40) / (1 << 24)
}

// NegativeTable draws negative samples with probability proportional to
// count^power (power 0.75 as in word2vec). It is Walker's alias table rather
// than word2vec's 10⁸-slot array: one lookup of 8 bytes per draw, exact
// probabilities, and 8 bytes per vocabulary word instead of hundreds of MB.
type NegativeTable struct {
	slots []aliasSlot
}

type aliasSlot struct {
	keep  uint32 // keep this slot's own word when the draw's high bits < keep
	alias int32
}

// NewNegativeTable builds the table for the given counts.
func NewNegativeTable(counts []int64, power float64) (*NegativeTable, error) {
	n := len(counts)
	if n == 0 {
		return nil, fmt.Errorf("negative table: empty vocabulary")
	}
	p := make([]float64, n)
	var z float64
	for i, c := range counts {
		p[i] = math.Pow(float64(c), power)
		z += p[i]
	}
	// Vose's algorithm on probabilities scaled by n.
	small := make([]int, 0, n)
	large := make([]int, 0, n)
	for i := range p {
		p[i] = p[i] * float64(n) / z
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	t := &NegativeTable{slots: make([]aliasSlot, n)}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.slots[s] = aliasSlot{keep: scaleKeep(p[s]), alias: int32(l)}
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// Left-overs are 1 up to rounding.
	for _, i := range append(small, large...) {
		t.slots[i] = aliasSlot{keep: math.MaxUint32, alias: int32(i)}
	}
	return t, nil
}

func scaleKeep(p float64) uint32 {
	return uint32(min(max(p, 0), 1) * math.MaxUint32)
}

// draw maps 64 random bits to a word id: the low 32 bits pick a slot, the
// high 32 bits decide between the slot's word and its alias.
func (t *NegativeTable) draw(r uint64) int32 {
	i := (uint64(uint32(r)) * uint64(len(t.slots))) >> 32
	s := t.slots[i]
	if uint32(r>>32) < s.keep {
		return int32(i)
	}
	return s.alias
}

// Probabilities returns the probability with which the table draws each
// word, computed from the table itself.
func (t *NegativeTable) Probabilities() []float64 {
	n := len(t.slots)
	p := make([]float64, n)
	for i, s := range t.slots {
		k := float64(s.keep) / math.MaxUint32
		if s.keep == math.MaxUint32 {
			k = 1
		}
		p[i] += k / float64(n)
		p[s.alias] += (1 - k) / float64(n)
	}
	return p
}
