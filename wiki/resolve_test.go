package wiki_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wordnet"
)

// memSource is a PageSource over title → wikitext, for unit tests.
type memSource struct {
	pages map[string]string
	fail  map[string]bool // titles that return a per-page error
	asked []string
}

func (m *memSource) Name() string { return "mem" }

func (m *memSource) Pages(_ context.Context, titles []string, full bool) ([]wiki.Page, error) {
	out := make([]wiki.Page, len(titles))
	for i, t := range titles {
		t = wiki.NormalizeTitle(t)
		m.asked = append(m.asked, t)
		out[i].Requested = t
		if m.fail[t] {
			out[i].Err = errors.New("unreadable " + t)
			continue
		}
		for hops := 0; hops < 5; hops++ {
			target, ok := wiki.RedirectTarget(m.pages[t])
			if !ok {
				break
			}
			t = target
		}
		text, ok := m.pages[t]
		if !ok {
			out[i].Missing = true
			continue
		}
		out[i].Title, out[i].Disambiguation, out[i].Revision = t, wiki.IsDisambiguationWikitext(text), "7"
		if !full {
			text = wiki.LeadSection(text)
		}
		out[i].Text = wiki.CleanWikitext(text)
	}
	return out, nil
}

func (m *memSource) Links(_ context.Context, title string) ([]string, error) {
	return wiki.WikiLinks(m.pages[wiki.NormalizeTitle(title)]), nil
}

const (
	craneBird    = "n02012849"
	craneMachine = "n03126707"
	smoothIron   = "n03584829"
	kitFox       = "n02119789"
)

func resolve(t *testing.T, wn *wordnet.DB, src wiki.PageSource, wnid string, opts wiki.ResolveOptions) (*wiki.Decision, error) {
	t.Helper()
	s, err := wn.Synset(wnid)
	if err != nil {
		t.Fatal(err)
	}
	return wiki.Resolve(context.Background(), src, wn, wiki.Request{ClassID: wnid, Synset: s}, opts)
}

func TestResolveReasons(t *testing.T) {
	wn := openWordNet(t)
	pages := map[string]string{
		"Crane":           "'''Crane''' may refer to:\n* [[Crane (bird)]]\n* [[Crane (machine)]]\n{{disambiguation}}",
		"Crane (bird)":    "Cranes are large, long-legged and long-necked wading birds of marshes and plains.",
		"Crane (machine)": "A crane is a machine with a hoist and a boom used to lift and move heavy loads.",
		"Iron":            "Iron is a chemical element, a metal with symbol Fe.",
		"Fox":             "Foxes are small omnivorous mammals of the dog family Canidae with a bushy tail.",
		"Kit fox":         "'''Kit fox''' may refer to:\n* [[Kit fox (band)]]\n{{disambiguation}}",
		"Orange (colour)": "Orange is a colour.",
		"Orange colour":   "#REDIRECT [[Orange (colour)]]",
	}
	tests := []struct {
		name      string
		wnid      string
		opts      wiki.ResolveOptions
		reason    wiki.Reason
		titles    string
		detailHas string
	}{
		{"scored among the disambiguation page's senses", craneBird, wiki.ResolveOptions{}, wiki.ReasonScored, "Crane (bird)", `"Crane (bird)" score`},
		{"the other sense", craneMachine, wiki.ResolveOptions{}, wiki.ReasonScored, "Crane (machine)", `over "Crane (bird)" 0.000`},
		{"override wins, redirects followed", craneBird, wiki.ResolveOptions{Overrides: wiki.Overrides{craneBird: {"Orange colour", "Fox"}}}, wiki.ReasonOverride, "Orange (colour) | Fox", ""},
		{"wrong-sense only candidate is rejected; no hypernym article: WordNet document", smoothIron, wiki.ResolveOptions{}, wiki.ReasonFallback, "", `no candidate article matched (best "Iron"`},
		{"a disambiguation page is never the document: hypernym's article", kitFox, wiki.ResolveOptions{}, wiki.ReasonFallback, "Fox", `hypernym n02118333 (fox) article "Fox"`},
		{"hypernym fallback off", kitFox, wiki.ResolveOptions{NoHypernymFallback: true}, wiki.ReasonFallback, "", "WordNet document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := resolve(t, wn, &memSource{pages: pages}, tt.wnid, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason != tt.reason || strings.Join(d.Titles, " | ") != tt.titles || !strings.Contains(d.Detail, tt.detailHas) {
				t.Errorf("got %s %q (%s); want %s %q with detail containing %q", d.Reason, d.Titles, d.Detail, tt.reason, tt.titles, tt.detailHas)
			}
			for _, c := range d.Candidates {
				if c.Status == "disambiguation" && c.Score != 0 {
					t.Errorf("disambiguation page %q was scored", c.Page)
				}
			}
		})
	}
}

func TestResolveExactAndErrors(t *testing.T) {
	wn := openWordNet(t)
	src := &memSource{pages: map[string]string{
		"Crane (bird)":    "Cranes are large, long-legged and long-necked wading birds of marshes and plains.",
		"Crane":           "{{disambiguation}} [[Crane (bird)]] [[Crane (machine)]]",
		"Crane (machine)": "A lifting machine.",
	}}
	d, err := resolve(t, wn, &memSource{pages: map[string]string{"Crane (bird)": src.pages["Crane (bird)"]}}, craneBird, wiki.ResolveOptions{})
	if err != nil || d.Reason != wiki.ReasonExact || d.Titles[0] != "Crane (bird)" {
		t.Errorf("single candidate: %+v, %v; want exact Crane (bird)", d, err)
	}
	// An unreadable candidate means no decision.
	_, err = resolve(t, wn, &memSource{pages: src.pages, fail: map[string]bool{"Crane (machine)": true}}, craneBird, wiki.ResolveOptions{})
	if err == nil || !strings.Contains(err.Error(), "unreadable Crane (machine)") {
		t.Errorf("unreadable candidate: err = %v", err)
	}
	for _, tt := range []struct{ title, want string }{
		{"Nope", `no page titled "Nope"`},
		{"Crane", `"Crane" is a disambiguation page`},
	} {
		_, err := resolve(t, wn, src, craneBird, wiki.ResolveOptions{Overrides: wiki.Overrides{craneBird: {tt.title}}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("override %q: err = %v, want %q", tt.title, err, tt.want)
		}
	}
	// A class without a synset is looked up by its name, and cannot fall back.
	as := &wiki.ArticleSource{Pages: &memSource{pages: map[string]string{"Black footed albatross": "An albatross."}}, WordNet: wn}
	doc, err := as.Document(context.Background(), wiki.Request{ClassID: "001", Name: "Black_footed_Albatross"})
	if err != nil || doc.Title != "Black footed albatross" || doc.Decision.Reason != wiki.ReasonExact {
		t.Errorf("class without synset: %+v, %v; want exact Black footed albatross", doc, err)
	}
	doc, err = as.Document(context.Background(), wiki.Request{ClassID: "002", Name: "Laysan Albatross"})
	if err == nil || doc != nil {
		t.Errorf("no synset and no article: want an error (nothing to fall back on), got %+v", doc)
	}
}

func TestArticleSourceJoinsOverrideArticles(t *testing.T) {
	wn := openWordNet(t)
	s, _ := wn.Synset(craneBird)
	src := &memSource{pages: map[string]string{"A": "First.\n== H ==\nMore.", "B": "Second."}}
	as := &wiki.ArticleSource{Pages: src, WordNet: wn, Options: wiki.ResolveOptions{Overrides: wiki.Overrides{craneBird: {"A", "B"}}}}
	doc, err := as.Document(context.Background(), wiki.Request{ClassID: "c", Synset: s})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "A | B" || doc.Text != "First.\nH\nMore.\n\nSecond." || doc.Revision != "7 | 7" || doc.Source != "mem" || doc.Reason() != "override" {
		t.Errorf("doc = %+v", doc)
	}
}

func TestParseOverrides(t *testing.T) {
	o, err := wiki.ParseOverrides(strings.NewReader("# comment\n\nn02012849\tCrane_(bird)\n n03126707 \tCrane (machine)\tTower crane\r\n"), "o.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o["n02012849"], "|") != "Crane (bird)" || strings.Join(o["n03126707"], "|") != "Crane (machine)|Tower crane" {
		t.Errorf("overrides = %q", o)
	}
	for _, tt := range []struct{ in, want string }{
		{"n02012849\n", "o.tsv:1: expected WNID<TAB>Title"},
		{"n02012849\t \n", "o.tsv:1: expected WNID<TAB>Title"},
		{"# x\nn1\tA\nn1\tB\n", "o.tsv:3: n1 is overridden twice"},
	} {
		if _, err := wiki.ParseOverrides(strings.NewReader(tt.in), "o.tsv"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseOverrides(%q) err = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestWordNetAndDirSources(t *testing.T) {
	wn := openWordNet(t)
	s, _ := wn.Synset(craneBird)
	doc, err := wiki.WordNetSource{WordNet: wn}.Document(context.Background(), wiki.Request{ClassID: "crane", Synset: s})
	if err != nil || doc.Text != wiki.WordNetDocument(wn, s) || doc.Source != "wordnet" || doc.Reason() != "wordnet" {
		t.Errorf("wordnet source: %+v, %v", doc, err)
	}
	if _, err := (wiki.WordNetSource{WordNet: wn}).Document(context.Background(), wiki.Request{ClassID: "x"}); err == nil {
		t.Error("wordnet source without a synset: no error")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "black_footed_albatross.txt"), []byte(" Albatross text \n"), 0o644)
	os.WriteFile(filepath.Join(dir, craneBird+".txt"), []byte("  \n"), 0o644)
	ds := wiki.DirSource{Dir: dir, WordNet: wn}
	doc, err = ds.Document(context.Background(), wiki.Request{ClassID: "black_footed_albatross"})
	if err != nil || doc.Text != "Albatross text" || doc.Source != "dir" {
		t.Errorf("dir by class id: %+v, %v", doc, err)
	}
	if _, err := ds.Document(context.Background(), wiki.Request{ClassID: "c", Synset: s}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: err = %v", err)
	}
	if _, err := ds.Document(context.Background(), wiki.Request{ClassID: "nothing"}); err == nil {
		t.Error("no file and no synset: no error")
	}
}
