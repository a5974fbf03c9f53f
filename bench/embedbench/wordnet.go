package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// synset is the part of a WordNet 3.0 noun synset this benchmark needs. The
// project's wiki package has the full reader; the benchmark keeps its own
// small one so that the reference (Wu-Palmer) does not depend on the code
// under test.
type synset struct {
	id        string // "n02119789"
	lemmas    []string
	hypernyms []string // @ and @i
	name      string   // nltk's name: first lemma, lower-cased, "." "n" "." sense number
}

type refWordNet struct {
	order []*synset
	byID  map[string]*synset
}

func readWordNet(dir string) (*refWordNet, error) {
	if dir == "" {
		dir = os.Getenv("WNHOME")
	}
	if dir == "" {
		dir = "/usr/share/wordnet"
	}
	wn := &refWordNet{byID: map[string]*synset{}}
	f, err := os.Open(filepath.Join(dir, "data.noun"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if strings.HasPrefix(t, "  ") {
			continue
		}
		head, _, ok := strings.Cut(t, " | ")
		if !ok {
			return nil, fmt.Errorf("data.noun:%d: no gloss", line)
		}
		fs := strings.Fields(head)
		wc, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("data.noun:%d: %w", line, err)
		}
		s := &synset{id: "n" + fs[0]}
		for i := 0; i < int(wc); i++ {
			s.lemmas = append(s.lemmas, fs[4+2*i])
		}
		p := 4 + 2*int(wc)
		pc, err := strconv.Atoi(fs[p])
		if err != nil {
			return nil, fmt.Errorf("data.noun:%d: %w", line, err)
		}
		for i := 0; i < pc; i++ {
			sym, off, pos := fs[p+1+4*i], fs[p+2+4*i], fs[p+3+4*i]
			if pos != "n" {
				continue
			}
			switch sym {
			case "@", "@i":
				s.hypernyms = append(s.hypernyms, "n"+off)
			}
		}
		wn.order = append(wn.order, s)
		wn.byID[s.id] = s
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Sense numbers for nltk's synset names, used only to break ties
	// between lowest common hypernyms exactly as nltk does.
	idx, err := os.Open(filepath.Join(dir, "index.noun"))
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	senses := map[string][]string{}
	sc = bufio.NewScanner(idx)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t := sc.Text()
		if strings.HasPrefix(t, "  ") {
			continue
		}
		fs := strings.Fields(t)
		n, _ := strconv.Atoi(fs[2])
		senses[fs[0]] = fs[len(fs)-n:]
	}
	for _, s := range wn.order {
		l := strings.ToLower(s.lemmas[0])
		for i, off := range senses[l] {
			if "n"+off == s.id {
				s.name = fmt.Sprintf("%s.n.%02d", l, i+1)
			}
		}
		if s.name == "" {
			return nil, fmt.Errorf("index.noun: no sense of %q points at %s", l, s.id)
		}
	}
	return wn, nil
}

// wup computes Wu-Palmer similarity exactly as nltk 3.8's
// Synset.wup_similarity for nouns (WordNet 3.0, no simulated root):
// the subsumer is the lowest common hypernym with the greatest min_depth
// (ties broken by nltk's synset name order, and the first synset itself when
// it is one), depth = subsumer.max_depth()+1, len_i = shortest path from
// synset i to the subsumer (through hypernyms and instance hypernyms) + depth,
// and wup = 2·depth/(len1+len2).
type wupCalc struct {
	wn       *refWordNet
	minDepth map[string]int
	maxDepth map[string]int
}

func newWup(wn *refWordNet) *wupCalc {
	return &wupCalc{wn: wn, minDepth: map[string]int{}, maxDepth: map[string]int{}}
}

func (w *wupCalc) depth(id string, longest bool) int {
	m := w.minDepth
	if longest {
		m = w.maxDepth
	}
	if d, ok := m[id]; ok {
		return d
	}
	s := w.wn.byID[id]
	d := 0
	for i, h := range s.hypernyms {
		hd := w.depth(h, longest) + 1
		if i == 0 || longest && hd > d || !longest && hd < d {
			d = hd
		}
	}
	m[id] = d
	return d
}

// ancestors returns the BFS distance from id to each of its hypernyms,
// itself included at 0 (nltk's _shortest_hypernym_paths).
func (w *wupCalc) ancestors(id string) map[string]int {
	dist := map[string]int{id: 0}
	queue := []string{id}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, h := range w.wn.byID[x].hypernyms {
			if _, ok := dist[h]; !ok {
				dist[h] = dist[x] + 1
				queue = append(queue, h)
			}
		}
	}
	return dist
}

func (w *wupCalc) sim(a, b string, anc map[string]map[string]int) float64 {
	ancA, ancB := anc[a], anc[b]
	var common []string
	for x := range ancA {
		if _, ok := ancB[x]; ok {
			common = append(common, x)
		}
	}
	if len(common) == 0 {
		return 0
	}
	best := -1
	var lch []*synset
	for _, x := range common {
		d := w.depth(x, false)
		if d > best {
			best, lch = d, lch[:0]
		}
		if d == best {
			lch = append(lch, w.wn.byID[x])
		}
	}
	sort.Slice(lch, func(i, j int) bool { return lch[i].name < lch[j].name })
	sub := lch[0].id
	for _, s := range lch {
		if s.id == a {
			sub = a
		}
	}
	depth := w.depth(sub, true) + 1
	ancSub := anc[sub]
	if ancSub == nil {
		ancSub = w.ancestors(sub)
		anc[sub] = ancSub
	}
	spd := func(x map[string]int) int {
		d := -1
		for y, d1 := range x {
			if d2, ok := ancSub[y]; ok && (d < 0 || d1+d2 < d) {
				d = d1 + d2
			}
		}
		return d
	}
	l1, l2 := spd(ancA)+depth, spd(ancB)+depth
	return 2 * float64(depth) / float64(l1+l2)
}
