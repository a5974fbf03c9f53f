package wiki_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wiki/wikitest"
	"github.com/lcl-project/lcl/wordnet"
)

type reviewed struct {
	wnid, set, class, title string
}

func readReviewed(t *testing.T) []reviewed {
	t.Helper()
	f, err := os.Open("../testdata/wiki/resolution.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []reviewed
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			t.Fatalf("resolution.tsv:%d: want 5 tab-separated fields, got %d", line, len(f))
		}
		out = append(out, reviewed{f[0], f[1], f[2], f[3]})
	}
	return out
}

// candidateSources returns the fixture candidate pages behind both the dump
// reader and the API client, so the heuristic is measured through the code
// that reads real sources.
func candidateSources(t *testing.T) map[string]wiki.PageSource {
	t.Helper()
	pages, err := wikitest.ReadPages("../testdata/wiki/candidates.wiki")
	if err != nil {
		t.Fatal(err)
	}
	files, err := wikitest.WriteDump(t.TempDir(), pages, wikitest.DumpOptions{PagesPerStream: 20})
	if err != nil {
		t.Fatal(err)
	}
	d, err := wiki.OpenDump(files.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := wikitest.NewAPIServer(pages)
	t.Cleanup(srv.Close)
	return map[string]wiki.PageSource{"dump": d, "api": wiki.NewAPIClient(srv.Endpoint())}
}

// TestResolutionQuality measures the heuristic on the reviewed table of
// ambiguous classes: at least 90% must resolve to the reviewed title.
func TestResolutionQuality(t *testing.T) {
	wn := openWordNet(t)
	table := readReviewed(t)
	if len(table) < 50 {
		t.Fatalf("reviewed table has %d classes, want at least 50", len(table))
	}
	for name, src := range candidateSources(t) {
		t.Run(name, func(t *testing.T) {
			right := 0
			reasons := map[wiki.Reason]int{}
			for _, r := range table {
				s, err := wn.Synset(r.wnid)
				if err != nil {
					t.Fatal(err)
				}
				d, err := wiki.Resolve(context.Background(), src, wn, wiki.Request{ClassID: r.class, Synset: s}, wiki.ResolveOptions{})
				if err != nil {
					t.Errorf("%s %s: %v", r.wnid, r.class, err)
					continue
				}
				reasons[d.Reason]++
				got := strings.Join(d.Titles, " | ")
				if got == r.title {
					right++
					continue
				}
				t.Logf("miss: %s %-16s reviewed %q, got %q (%s)", r.wnid, r.class, r.title, got, d)
			}
			acc := float64(right) / float64(len(table))
			t.Logf("%s: %d/%d = %.1f%% resolved to the reviewed title; reasons %v", name, right, len(table), 100*acc, reasons)
			if acc < 0.9 {
				t.Errorf("resolution accuracy %.1f%% < 90%%", 100*acc)
			}
		})
	}
}

var sharedWordNet = sync.OnceValues(func() (*wordnet.DB, error) { return wordnet.Open("") })

// openWordNet opens WordNet 3.0 once for all tests of this package (it is
// read-only once opened).
func openWordNet(t *testing.T) *wordnet.DB {
	t.Helper()
	wn, err := sharedWordNet()
	if err != nil {
		t.Fatalf("WordNet 3.0 is required for this test (run `make deps`, or apt-get install wordnet-base): %v", err)
	}
	return wn
}
