package wiki

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/wordnet"
)

// Reason says how a class's document was chosen.
type Reason string

const (
	ReasonOverride Reason = "override" // the user's override file named the title(s)
	ReasonExact    Reason = "exact"    // one candidate article existed and it matched the synset
	ReasonScored   Reason = "scored"   // several candidate articles; the best-matching one won
	ReasonFallback Reason = "fallback" // no matching article: the hypernym's article or the WordNet document
	ReasonWordNet  Reason = "wordnet"  // --source wordnet: the WordNet document by choice
	ReasonFile     Reason = "file"     // --source dir: the user's <wnid>.txt file
)

// Decision is how a synset was mapped to its document.
type Decision struct {
	WNID       string
	Titles     []string // chosen article titles after redirects; none for a WordNet document
	Reason     Reason
	Detail     string  // for people: scores, the hypernym used, why a fallback
	Score      float64 // the chosen candidate's score (exact, scored)
	Candidates []Candidate
}

// String is the stored reason: "kind" or "kind: detail".
func (d *Decision) String() string {
	if d.Detail == "" {
		return string(d.Reason)
	}
	return string(d.Reason) + ": " + d.Detail
}

// Candidate is one title the resolver considered.
type Candidate struct {
	Title  string  // as generated
	Page   string  // after redirects ("" when missing)
	From   string  // lemma, hypernym (a "Lemma (hypernym)" form), disambiguation (linked from a disambiguation page)
	Status string  // article, missing, disambiguation, error
	Score  float64 // for articles
}

// Overrides maps a wnid (or, for classes without a synset, a class id) to
// the article titles to use for it.
type Overrides map[string][]string

// ReadOverrides reads an override file: one class per line,
// WNID<TAB>Title[<TAB>Title2…]; blank lines and lines starting with # are
// ignored. Several titles make one document of several articles.
func ReadOverrides(path string) (Overrides, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wiki: overrides: %w", err)
	}
	defer f.Close()
	return ParseOverrides(f, path)
}

// ParseOverrides parses the override format (see ReadOverrides); name is
// used in error messages.
func ParseOverrides(r io.Reader, name string) (Overrides, error) {
	o := Overrides{}
	sc := bounded.NewScanner(r, 1<<20)
	for sc.Scan() {
		line := sc.Line()
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		f := strings.Split(text, "\t")
		key := strings.TrimSpace(f[0])
		var titles []string
		for _, t := range f[1:] {
			if t = NormalizeTitle(t); t != "" {
				titles = append(titles, t)
			}
		}
		if key == "" || len(titles) == 0 {
			return nil, fmt.Errorf("wiki: %s:%d: expected WNID<TAB>Title[<TAB>Title2…], got %q", name, line, text)
		}
		if _, dup := o[key]; dup {
			return nil, fmt.Errorf("wiki: %s:%d: %s is overridden twice", name, line, key)
		}
		o[key] = titles
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("wiki: %s: %w", name, err)
	}
	return o, nil
}

// ResolveOptions tune Resolve. The zero value uses the defaults.
type ResolveOptions struct {
	Overrides Overrides
	// MinScore is the least score an article needs to be accepted
	// (default 0.05; see score).
	MinScore float64
	// HypernymDepth is how many levels of hypernyms give "Lemma (hypernym)"
	// candidates (default 4: seal → pinniped → aquatic mammal → placental →
	// mammal gives "Seal (mammal)").
	HypernymDepth int
	// MaxCandidates caps the generated titles per synset (default 40: two
	// API requests).
	MaxCandidates int
	// NoHypernymFallback turns off the hypernym's-article fallback, leaving
	// only the WordNet document.
	NoHypernymFallback bool
}

func (o *ResolveOptions) defaults() {
	if o.MinScore == 0 {
		o.MinScore = 0.05
	}
	if o.HypernymDepth == 0 {
		o.HypernymDepth = 4
	}
	if o.MaxCandidates == 0 {
		o.MaxCandidates = 40
	}
}

// Resolve maps a class to the Wikipedia article(s) describing it:
//
//  1. An override (by wnid, else class id) wins; its titles must exist
//     (redirects followed) and must not be disambiguation pages.
//  2. Candidates are the synset's lemmas as titles, "Lemma (hypernym
//     lemma)" forms for hypernyms up to HypernymDepth levels, and the links
//     of any disambiguation page among them whose title without its
//     qualifier is a lemma ("Crane (machine)" from "Crane").
//  3. Each candidate article (disambiguation pages never) is scored by the
//     overlap of its title and lead text with the synset's gloss, examples,
//     hypernym lemmas and hyponym lemmas (see score). The best one with at
//     least MinScore wins: reason exact when it was the only candidate
//     article, scored otherwise.
//     A class without a synset has nothing to score against: its name (as
//     given, then in sentence case) must be an article, taken as exact.
//  4. Else the fallback: the first hypernym (in Parents order) whose own
//     candidates give an article, else no title: the WordNet document.
//
// An error means the class could not be decided: the source failed, a
// candidate page could not be read (a corrupt dump stream: deciding without
// it could pick the wrong article), or an override names a missing page or a
// disambiguation page. A fallback is not an error.
func Resolve(ctx context.Context, src PageSource, wn *wordnet.DB, req Request, opts ResolveOptions) (*Decision, error) {
	opts.defaults()
	d := &Decision{WNID: req.wnid()}
	key := req.wnid()
	if key == "" {
		key = req.ClassID
	}
	if titles, ok := opts.Overrides[key]; ok {
		pages, err := src.Pages(ctx, titles, false)
		if err != nil {
			return nil, fmt.Errorf("override %s: %w", key, err)
		}
		for _, p := range pages {
			switch {
			case p.Err != nil:
				return nil, fmt.Errorf("override %s: %w", key, p.Err)
			case p.Missing:
				return nil, fmt.Errorf("override %s: no page titled %q", key, p.Requested)
			case p.Disambiguation:
				return nil, fmt.Errorf("override %s: %q is a disambiguation page; name the article", key, p.Title)
			}
			d.Titles = append(d.Titles, p.Title)
		}
		d.Reason = ReasonOverride
		return d, nil
	}
	t := newTarget(wn, req, opts.HypernymDepth)
	best, err := pick(ctx, src, t, opts, d)
	if err != nil {
		return nil, err
	}
	if best != nil {
		return d, nil
	}
	why := "no candidate article"
	if c := bestCandidate(d.Candidates); c != nil {
		why = fmt.Sprintf("no candidate article matched (best %q %.3f < %.3f)", c.Page, c.Score, opts.MinScore)
	}
	d.Reason = ReasonFallback
	if !opts.NoHypernymFallback && req.Synset != nil {
		for _, pid := range req.Synset.Parents() {
			ps, ok := wn.Get(pid)
			if !ok {
				continue
			}
			pd := &Decision{}
			pt := newTarget(wn, Request{Synset: ps}, opts.HypernymDepth)
			c, err := pick(ctx, src, pt, opts, pd)
			if err != nil {
				return nil, fmt.Errorf("hypernym %s of %s: %w", pid, req.wnid(), err)
			}
			if c != nil {
				d.Titles = pd.Titles
				d.Score = pd.Score
				d.Detail = fmt.Sprintf("%s; hypernym %s (%s) article %q", why, pid, ps.Name(), c.Page)
				return d, nil
			}
		}
	}
	d.Detail = why + "; WordNet document"
	return d, nil
}

func bestCandidate(cs []Candidate) *Candidate {
	var best *Candidate
	for i := range cs {
		if cs[i].Status == "article" && (best == nil || cs[i].Score > best.Score) {
			best = &cs[i]
		}
	}
	return best
}

// pick generates and scores the candidates of t, filling d; it returns the
// chosen candidate or nil.
func pick(ctx context.Context, src PageSource, t *target, opts ResolveOptions, d *Decision) (*Candidate, error) {
	titles, froms, seen := t.candidateTitles(opts.MaxCandidates)
	pages, froms, err := fetchCandidates(ctx, src, t, titles, froms, seen)
	if err != nil {
		return nil, err
	}
	articles, err := t.scoreCandidates(pages, froms, d)
	if err != nil {
		// A candidate that could not be read might have been the best one:
		// no decision on partial information.
		return nil, err
	}
	if t.sigTotal == 0 {
		// Nothing to score against (a class without a synset): the first
		// existing article in candidate order.
		for i := range d.Candidates {
			if c := &d.Candidates[i]; c.Status == "article" {
				d.Titles, d.Reason = []string{c.Page}, ReasonExact
				d.Detail = fmt.Sprintf("%q: no synset to score against; first existing article", c.Page)
				return c, nil
			}
		}
		return nil, nil
	}
	best := bestCandidate(d.Candidates)
	if best == nil || best.Score < opts.MinScore {
		return nil, nil
	}
	d.Titles = []string{best.Page}
	d.Score = best.Score
	if articles == 1 {
		d.Reason = ReasonExact
		d.Detail = fmt.Sprintf("%q score %.3f", best.Page, best.Score)
	} else {
		d.Reason = ReasonScored
		var others []string
		for _, c := range d.Candidates {
			if c.Status == "article" && c.Page != best.Page {
				others = append(others, fmt.Sprintf("%q %.3f", c.Page, c.Score))
			}
		}
		d.Detail = fmt.Sprintf("%q score %.3f over %s", best.Page, best.Score, strings.Join(others, ", "))
	}
	return best, nil
}

// candidateTitles are the titles tried for t, at most limit, in order: its
// lemmas, the first one's disambiguation page, each lemma qualified by its
// hypernyms, the other lemmas' disambiguation pages; froms says where each
// comes from, seen holds them all.
func (t *target) candidateTitles(limit int) (titles, froms []string, seen map[string]bool) {
	seen = map[string]bool{}
	add := func(title, from string) {
		title = NormalizeTitle(title)
		if title != "" && !seen[title] && len(titles) < limit {
			seen[title] = true
			titles, froms = append(titles, title), append(froms, from)
		}
	}
	for _, l := range t.lemmas {
		add(l, "lemma")
	}
	for i, l := range t.lemmas {
		if i == 0 {
			add(l+" (disambiguation)", "lemma")
		}
		for _, q := range t.qualifiers {
			add(l+" ("+q+")", "hypernym")
		}
	}
	for _, l := range t.lemmas[min(1, len(t.lemmas)):] {
		add(l+" (disambiguation)", "lemma")
	}
	return titles, froms, seen
}

// fetchCandidates reads the pages of titles, and the articles named after
// t's lemmas that the disambiguation pages of lemma titles list (not in
// seen), and returns them with where each comes from.
func fetchCandidates(ctx context.Context, src PageSource, t *target, titles, froms []string, seen map[string]bool) ([]Page, []string, error) {
	pages, err := src.Pages(ctx, titles, false)
	if err != nil {
		return nil, nil, err
	}
	var extra []string
	for i, p := range pages {
		if !p.Disambiguation || froms[i] != "lemma" {
			continue
		}
		links, err := src.Links(ctx, p.Title)
		if err != nil {
			return nil, nil, fmt.Errorf("links of disambiguation page %q: %w", p.Title, err)
		}
		for _, l := range links {
			if t.namedAfterLemma(l) && !seen[l] {
				seen[l] = true
				extra = append(extra, l)
			}
		}
	}
	if len(extra) > 0 {
		more, err := src.Pages(ctx, extra, false)
		if err != nil {
			return nil, nil, err
		}
		pages = append(pages, more...)
		for range extra {
			froms = append(froms, "disambiguation")
		}
	}
	return pages, froms, nil
}

// scoreCandidates adds the pages to d.Candidates, scoring each article
// against t once (a redirect to a page already scored is left out), and
// returns the number of articles, or the first page's read error.
func (t *target) scoreCandidates(pages []Page, froms []string, d *Decision) (int, error) {
	var firstErr error
	byPage := map[string]bool{}
	articles := 0
	for i, p := range pages {
		c := Candidate{Title: p.Requested, Page: p.Title, From: froms[i]}
		switch {
		case p.Err != nil:
			c.Status = "error"
			if firstErr == nil {
				firstErr = p.Err
			}
		case p.Missing:
			c.Status = "missing"
		case p.Disambiguation:
			c.Status = "disambiguation"
		case byPage[p.Title]:
			continue // a redirect to a page already scored
		default:
			byPage[p.Title] = true
			c.Status = "article"
			c.Score = t.score(p.Title, p.Text)
			articles++
		}
		d.Candidates = append(d.Candidates, c)
	}
	return articles, firstErr
}

// target is what the resolver knows about a class.
type target struct {
	lemmas     []string // display form, spaces
	lemmaSet   map[string]bool
	qualifiers []string // hypernym lemmas, nearest level first
	signature  map[string]float64
	sigTotal   float64
}

func newTarget(wn *wordnet.DB, req Request, depth int) *target {
	t := &target{lemmaSet: map[string]bool{}, signature: map[string]float64{}}
	own := map[string]bool{}
	addLemma := func(l string) {
		l = strings.ReplaceAll(l, "_", " ")
		if !slices.Contains(t.lemmas, l) { // titles are case-sensitive after the first letter
			t.lemmas = append(t.lemmas, l)
		}
		t.lemmaSet[strings.ToLower(l)] = true
		for _, w := range tokens(l) {
			own[w] = true
		}
	}
	s := req.Synset
	if s == nil {
		// No synset: the class name as given and in sentence case
		// ("Black footed Albatross" → "Black footed albatross").
		addLemma(req.Name)
		if name := strings.ReplaceAll(req.Name, "_", " "); len(name) > 1 {
			addLemma(name[:1] + strings.ToLower(name[1:]))
		}
	} else {
		for _, l := range s.Lemmas {
			addLemma(l)
		}
	}
	sig := func(text string, w float64) {
		for _, tok := range tokens(text) {
			if !own[tok] && t.signature[tok] < w {
				t.signature[tok] = w
			}
		}
	}
	if s != nil {
		sig(s.Gloss, 1)
		for _, e := range s.Examples {
			sig(e, 1)
		}
		for _, ids := range [][]string{s.Hyponyms, s.InstanceHyponyms} {
			for _, id := range ids {
				if h, ok := wn.Get(id); ok {
					for _, l := range h.Lemmas {
						sig(strings.ReplaceAll(l, "_", " "), 0.5)
					}
				}
			}
		}
		// Hypernyms level by level; the nearest levels give qualifiers.
		seen := map[string]bool{}
		qseen := map[string]bool{}
		level := s.Parents()
		for d := 1; len(level) > 0 && d <= 8; d++ {
			var next []string
			for _, id := range level {
				h, ok := wn.Get(id)
				if !ok || seen[id] {
					continue
				}
				seen[id] = true
				for _, l := range h.Lemmas {
					l = strings.ReplaceAll(l, "_", " ")
					sig(l, 1)
					if d <= depth && !qseen[strings.ToLower(l)] {
						qseen[strings.ToLower(l)] = true
						t.qualifiers = append(t.qualifiers, l)
					}
				}
				next = append(next, h.Parents()...)
			}
			level = next
		}
	}
	for _, w := range t.signature {
		t.sigTotal += w
	}
	return t
}

// namedAfterLemma reports whether a title linked from a disambiguation page
// names a sense of one of the lemmas: "Crane (machine)" (a lemma with a
// qualifier) or "Crane fly" (a lemma followed by more words).
func (t *target) namedAfterLemma(title string) bool {
	if t.lemmaSet[strings.ToLower(stripQualifier(title))] {
		return true
	}
	lower := strings.ToLower(title)
	for l := range t.lemmaSet {
		if strings.HasPrefix(lower, l+" ") {
			return true
		}
	}
	return false
}

// score is the weighted share of the synset's signature words (gloss and
// examples 1, hypernym lemmas 1, hyponym lemmas 0.5; the synset's own lemma
// words excluded, as every candidate has them) that occur in the page's title
// or text, after lower-casing and folding plurals. It lies in [0, 1].
func (t *target) score(title, text string) float64 {
	if t.sigTotal == 0 {
		return 0
	}
	words := map[string]bool{}
	for _, w := range tokens(title) {
		words[w] = true
	}
	for _, w := range tokens(text) {
		words[w] = true
	}
	var s float64
	for w, wt := range t.signature {
		if words[w] {
			s += wt
		}
	}
	return s / t.sigTotal
}

var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for with that this are was were from which its has have had been also any
		many one two three other such into than them they their used use may can more most some being not but all often
		etc who whose where when what about there these those very usually especially something someone kind type form
		part having called known various like only well each both between over under out its his her our your you
		make made how much within without after before during while upon onto per via include including includes
		among same different several another way ways thing things number`) {
		m[w] = true
	}
	return m
}()

// tokens lower-cases text, splits it into letter/digit runs, drops stopwords
// and words under three letters, and folds plurals.
func tokens(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) < 3 || stopwords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}
