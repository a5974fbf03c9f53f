package wiki

import (
	"strings"

	"github.com/lcl-project/lcl/wordnet"
)

// WordNetDocument is the document of the wordnet source: a plain-text
// description of a synset built from WordNet alone, for classes without a
// Wikipedia article and for corpora of one document per noun synset.
//
// It holds one line per synset, in this order:
//
//  1. the synset itself;
//  2. its hypernyms, then its instance hypernyms (wordnet.Synset.Parents), in
//     data.noun pointer order;
//  3. its hyponyms, then its instance hyponyms, in data.noun pointer order.
//
// Only direct neighbours are used (one step up, one step down). Each line is
//
//	lemma one, lemma two: gloss "example one" "example two"
//
// with underscores in lemmas turned into spaces; the examples (and their
// quotes) are left out when the synset has none. Pointers to synsets missing
// from wn are skipped. The result depends only on WordNet, so it is stable
// across runs; it is cheap (one allocation for the builder's buffer, sized up
// front) because it is built for all 82,115 noun synsets.
func WordNetDocument(wn *wordnet.DB, s *wordnet.Synset) string {
	n := docLineLen(s)
	neighbours := func(yield func(*wordnet.Synset)) {
		for _, ids := range [...][]string{s.Hypernyms, s.InstanceHypernyms, s.Hyponyms, s.InstanceHyponyms} {
			for _, id := range ids {
				if t, ok := wn.Get(id); ok {
					yield(t)
				}
			}
		}
	}
	neighbours(func(t *wordnet.Synset) { n += 1 + docLineLen(t) })
	var b strings.Builder
	b.Grow(n)
	writeDocLine(&b, s)
	neighbours(func(t *wordnet.Synset) {
		b.WriteByte('\n')
		writeDocLine(&b, t)
	})
	return b.String()
}

// WordNetLine is the first line of WordNetDocument: the synset's own
// lemmas and gloss, without its neighbours' lines.
func WordNetLine(s *wordnet.Synset) string {
	var b strings.Builder
	b.Grow(docLineLen(s))
	writeDocLine(&b, s)
	return b.String()
}

func docLineLen(s *wordnet.Synset) int {
	n := len(s.Gloss) + 2
	for _, l := range s.Lemmas {
		n += len(l) + 2
	}
	for _, e := range s.Examples {
		n += len(e) + 3
	}
	return n
}

func writeDocLine(b *strings.Builder, s *wordnet.Synset) {
	for i, l := range s.Lemmas {
		if i > 0 {
			b.WriteString(", ")
		}
		for j := 0; j < len(l); j++ {
			if c := l[j]; c == '_' {
				b.WriteByte(' ')
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteString(": ")
	b.WriteString(s.Gloss)
	for _, e := range s.Examples {
		b.WriteString(" \"")
		b.WriteString(e)
		b.WriteByte('"')
	}
}
