package wordnet

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
)

// MinDepth is the length of the shortest hypernym path from the synset to a
// root (entity has depth 0). Instance hypernyms count as hypernyms, as in nltk.
func (wn *DB) MinDepth(wnid string) (int, error) { return wn.depth(wnid, false) }

// MaxDepth is the length of the longest hypernym path to a root.
func (wn *DB) MaxDepth(wnid string) (int, error) { return wn.depth(wnid, true) }

func (wn *DB) depth(wnid string, longest bool) (int, error) {
	wn.depthMu.Lock()
	defer wn.depthMu.Unlock()
	if wn.minDepth == nil {
		wn.minDepth, wn.maxDepth = map[string]int{}, map[string]int{}
	}
	return wn.depthLocked(wnid, longest, 0)
}

func (wn *DB) depthLocked(wnid string, longest bool, guard int) (int, error) {
	memo := wn.minDepth
	if longest {
		memo = wn.maxDepth
	}
	if d, ok := memo[wnid]; ok {
		return d, nil
	}
	if guard > 100 {
		return 0, fmt.Errorf("wordnet: hypernym cycle through %s", wnid)
	}
	s, err := wn.Synset(wnid)
	if err != nil {
		return 0, err
	}
	d := 0
	for i, p := range s.Parents() {
		pd, err := wn.depthLocked(p, longest, guard+1)
		if err != nil {
			return 0, err
		}
		if i == 0 || (longest && pd+1 > d) || (!longest && pd+1 < d) {
			d = pd + 1
		}
	}
	memo[wnid] = d
	return d, nil
}

// hypernymDistances returns the breadth-first distance from wnid to itself
// (0) and to each of its ancestors.
func (wn *DB) hypernymDistances(wnid string) (map[string]int, error) {
	dist := map[string]int{wnid: 0}
	frontier := []string{wnid}
	for d := 1; len(frontier) > 0; d++ {
		var next []string
		for _, id := range frontier {
			s, err := wn.Synset(id)
			if err != nil {
				return nil, err
			}
			for _, p := range s.Parents() {
				if _, ok := dist[p]; !ok {
					dist[p] = d
					next = append(next, p)
				}
			}
		}
		frontier = next
	}
	return dist, nil
}

// NLTKName is the name nltk gives wnid's synset ("crane.n.05"): its first
// lemma in lower case and the synset's sense number for that lemma. nltk
// breaks ties between equally deep common hypernyms by this name, so a fast
// Wu–Palmer that orders ancestors once must order them by it too.
func (wn *DB) NLTKName(wnid string) (string, error) {
	s, err := wn.Synset(wnid)
	if err != nil {
		return "", err
	}
	return wn.nltkName(s)
}

// nltkName is the synset's name as nltk spells it ("crane.n.05"); nltk breaks
// ties between equally deep common hypernyms by this name.
// A malformed index.noun is an error, not a silently different tie-break.
func (wn *DB) nltkName(s *Synset) (string, error) {
	lemma := strings.ToLower(s.Lemmas[0])
	sense := 1
	ss, err := wn.Lookup(lemma)
	if err != nil && !errors.Is(err, ErrUnknownSynset) && !errors.Is(err, fs.ErrNotExist) {
		return "", err // index.noun exists but is malformed
	}
	for i, c := range ss {
		if c.ID == s.ID {
			sense = i + 1
		}
	}
	return fmt.Sprintf("%s.n.%02d", lemma, sense), nil
}

// WuPalmer is Wu–Palmer similarity, computed exactly as nltk's
// wup_similarity on WordNet 3.0 nouns: the lowest common hypernym is the
// common hypernym of greatest minimum depth, its depth is its maximum depth
// plus one, and each synset's distance to it is the shortest hypernym path.
func (wn *DB) WuPalmer(a, b string) (float64, error) {
	da, err := wn.hypernymDistances(a)
	if err != nil {
		return 0, err
	}
	db, err := wn.hypernymDistances(b)
	if err != nil {
		return 0, err
	}
	var lowest []string // common hypernyms of greatest minimum depth
	bestDepth := -1
	for id := range da {
		if _, ok := db[id]; !ok {
			continue
		}
		d, err := wn.MinDepth(id)
		if err != nil {
			return 0, err
		}
		switch {
		case d > bestDepth:
			lowest, bestDepth = append(lowest[:0], id), d
		case d == bestDepth:
			lowest = append(lowest, id)
		}
	}
	best := ""
	if len(lowest) == 1 {
		best = lowest[0]
	} else if len(lowest) > 1 {
		bestName := ""
		for _, id := range lowest {
			if id == a {
				best = a
				break
			}
			s, err := wn.Synset(id)
			if err != nil {
				return 0, err
			}
			name, err := wn.nltkName(s)
			if err != nil {
				return 0, err
			}
			if best == "" || name < bestName {
				best, bestName = id, name
			}
		}
	}
	if best == "" {
		return 0, nil
	}
	maxD, err := wn.MaxDepth(best)
	if err != nil {
		return 0, err
	}
	depth := float64(maxD + 1)
	ds, err := wn.hypernymDistances(best)
	if err != nil {
		return 0, err
	}
	pathTo := func(from map[string]int) float64 {
		m := math.MaxInt
		for id, d1 := range from {
			if d2, ok := ds[id]; ok && d1+d2 < m {
				m = d1 + d2
			}
		}
		return float64(m)
	}
	l1, l2 := pathTo(da)+depth, pathTo(db)+depth
	return 2 * depth / (l1 + l2), nil
}
