package wiki_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wiki"
)

// fakeSource gives "text of ID" for every class except those in fail, and
// blocks on the class in block until the context ends.
type fakeSource struct {
	name  string
	fail  map[string]bool
	block string
	mu    sync.Mutex
	calls map[string]int
}

func (s *fakeSource) Name() string { return s.name }
func (s *fakeSource) Close() error { return nil }
func (s *fakeSource) Document(ctx context.Context, req wiki.Request) (*wiki.Document, error) {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[req.ClassID]++
	s.mu.Unlock()
	if req.ClassID == s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.fail[req.ClassID] {
		return nil, fmt.Errorf("no page for %s", req.ClassID)
	}
	return &wiki.Document{Title: req.ClassID, Text: "text of " + req.ClassID, Source: s.name,
		Decision: &wiki.Decision{Reason: wiki.ReasonExact}}, nil
}

// memStore is an ArticleStore in a map that records its write batches.
type memStore struct {
	mu      sync.Mutex
	arts    map[string]simstore.Article
	corrupt map[string]bool
	batches []int
}

func (m *memStore) GetArticle(_ context.Context, set, id string) (*simstore.Article, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.corrupt[id] {
		return nil, &simstore.CorruptError{Key: "art/" + set + "/" + id, Reason: "checksum mismatch"}
	}
	a, ok := m.arts[set+"/"+id]
	if !ok {
		return nil, fmt.Errorf("art/%s/%s: %w", set, id, simstore.ErrNotFound)
	}
	return &a, nil
}

func (m *memStore) PutArticles(_ context.Context, arts ...simstore.Article) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.arts == nil {
		m.arts = map[string]simstore.Article{}
	}
	for _, a := range arts {
		m.arts[a.LabelSet+"/"+a.ClassID] = a
	}
	m.batches = append(m.batches, len(arts))
	return nil
}

func labelSet(n int) *labels.Set {
	set := &labels.Set{Name: "toy"}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		set.Classes = append(set.Classes, labels.Class{Index: i, ID: id, Name: id})
	}
	return set
}

func TestFetchStoresSkipsAndRetries(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	set := labelSet(5)
	src := &fakeSource{name: "api", fail: map[string]bool{"c003": true}}
	var docs, fails []string
	var total int
	sum, err := wiki.Fetch(ctx, st, set, src, nil, wiki.FetchOptions{Concurrency: 3,
		Progress:   func(done, n int) { total = n },
		OnDocument: func(c labels.Class, _ *wiki.Document) { docs = append(docs, c.ID) },
		OnFailure:  func(c labels.Class, _ error) { fails = append(fails, c.ID) }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Fetched != 4 || sum.Failed != 1 || sum.Cached != 0 || sum.Errors["c003"] != "no page for c003" || total != 5 || len(docs) != 4 || len(fails) != 1 {
		t.Fatalf("first fetch: %+v, progress total %d, documents %v, failures %v", sum, total, docs, fails)
	}
	if a := st.arts["toy/c001"]; a.Text != "text of c001" || a.Source != "api" || a.Reason != "exact" || a.Title != "c001" {
		t.Errorf("stored %+v", a)
	}
	// Again: only the failed class is fetched; with Refresh every class.
	sum, err = wiki.Fetch(ctx, st, set, src, nil, wiki.FetchOptions{})
	if err != nil || sum.Cached != 4 || sum.Failed != 1 || src.calls["c000"] != 1 || src.calls["c003"] != 2 {
		t.Fatalf("second fetch: %+v %v, calls %v", sum, err, src.calls)
	}
	delete(src.fail, "c003")
	st.corrupt = map[string]bool{"c004": true}
	sum, err = wiki.Fetch(ctx, st, set, src, nil, wiki.FetchOptions{})
	if err != nil || sum.Cached != 3 || sum.Fetched != 2 || src.calls["c004"] != 2 {
		t.Fatalf("third fetch (c003 fixed, c004 corrupt): %+v %v, calls %v", sum, err, src.calls)
	}
	st.corrupt = nil
	sum, err = wiki.Fetch(ctx, st, set, src, nil, wiki.FetchOptions{Refresh: true})
	if err != nil || sum.Fetched != 5 || sum.Cached != 0 {
		t.Fatalf("refresh: %+v %v", sum, err)
	}
}

// Documents are stored in batches of at most 64 as they arrive.
func TestFetchBatchesWrites(t *testing.T) {
	st := &memStore{}
	sum, err := wiki.Fetch(context.Background(), st, labelSet(300), &fakeSource{name: "dump"}, nil, wiki.FetchOptions{Concurrency: 4})
	if err != nil || sum.Fetched != 300 || len(st.arts) != 300 {
		t.Fatalf("%+v %v, %d stored", sum, err, len(st.arts))
	}
	stored := 0
	for _, n := range st.batches {
		if n < 1 || n > 64 {
			t.Errorf("a batch of %d", n)
		}
		stored += n
	}
	if stored != 300 || len(st.batches) < 5 {
		t.Errorf("batches %v", st.batches)
	}
}

// Cancelled in the middle, a fetch keeps what it fetched and says it stopped.
func TestFetchCancelledKeepsWork(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := &memStore{}
	set := labelSet(6)
	src := &fakeSource{name: "api", block: "c003"}
	sum, err := wiki.Fetch(ctx, st, set, src, nil, wiki.FetchOptions{Concurrency: 1,
		OnDocument: func(c labels.Class, _ *wiki.Document) {
			if c.ID == "c002" {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || sum == nil || !sum.Stopped || sum.Failed != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
	for _, id := range []string{"c000", "c001", "c002"} {
		if _, ok := st.arts["toy/"+id]; !ok {
			t.Errorf("%s fetched before the cancel was not stored", id)
		}
	}
	if _, ok := st.arts["toy/c005"]; ok {
		t.Error("fetched on after the cancel")
	}
}

func TestReusable(t *testing.T) {
	for _, tt := range []struct {
		stored simstore.Article
		source string
		want   bool
	}{
		{simstore.Article{Source: "api", Reason: "exact"}, "api", true},
		{simstore.Article{Source: "api", Reason: "exact"}, "dump", false},
		{simstore.Article{Source: "wordnet", Reason: "fallback: no article; WordNet document"}, "dump", true},
		{simstore.Article{Source: "api", Reason: "fallback: hypernym's article"}, "dump", true},
		{simstore.Article{Source: "api", Reason: "fallback: hypernym's article"}, "wordnet", false},
		{simstore.Article{Source: "wordnet", Reason: "fallback: no c.txt"}, "dir", false},
		{simstore.Article{Source: "wordnet", Reason: "wordnet"}, "wordnet", true},
	} {
		if got := wiki.Reusable(&tt.stored, tt.source); got != tt.want {
			t.Errorf("Reusable(%+v, %s) = %v, want %v", tt.stored, tt.source, got, tt.want)
		}
	}
}

func TestOpenSourceSpecs(t *testing.T) {
	for _, tt := range []struct {
		spec string
		opts wiki.SourceOptions
		name string
		bad  string // a SpecError containing this
	}{
		{spec: "wordnet", name: "wordnet"},
		{spec: "api", name: "api"},
		{spec: "dir:" + t.TempDir(), name: "dir"},
		{spec: "web", bad: `unknown source "web"`},
		{spec: "dump:", bad: "dump:PATH needs"},
		{spec: "dir:", bad: "dir:PATH needs"},
		{spec: "wordnet", opts: wiki.SourceOptions{OverridesFile: "x.tsv"}, bad: "not wordnet"},
	} {
		src, err := wiki.OpenSource(tt.spec, nil, tt.opts)
		var se *wiki.SpecError
		switch {
		case tt.bad != "":
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("%s: %v, want a SpecError with %q", tt.spec, err, tt.bad)
			}
		case err != nil || src.Name() != tt.name:
			t.Errorf("%s: %v", tt.spec, err)
		default:
			src.Close()
		}
	}
	// A dump that is not there fails to open: not a spec error.
	if _, err := wiki.OpenSource("dump:/nonexistent/enwiki.xml.bz2", nil, wiki.SourceOptions{}); err == nil || errors.As(err, new(*wiki.SpecError)) {
		t.Errorf("missing dump: %v", err)
	}
}

// unreachableSource fails every class as a machine without the network does.
type unreachableSource struct{ calls atomic.Int32 }

func (s *unreachableSource) Name() string { return "api" }
func (s *unreachableSource) Close() error { return nil }
func (s *unreachableSource) Document(ctx context.Context, req wiki.Request) (*wiki.Document, error) {
	s.calls.Add(1)
	return nil, fmt.Errorf("api: https://example.invalid %w (no such host)", wiki.ErrUnreachable)
}

// A source that cannot be reached stops the fetch at its first answer, in
// one error naming the offline sources, with nothing counted as failed.
func TestFetchStopsWhenUnreachable(t *testing.T) {
	src := &unreachableSource{}
	sum, err := wiki.Fetch(context.Background(), &memStore{}, labelSet(200), src, nil, wiki.FetchOptions{Concurrency: 2})
	if !errors.Is(err, wiki.ErrUnreachable) || !strings.Contains(err.Error(), "--source wordnet") {
		t.Fatalf("error %v; want ErrUnreachable naming --source wordnet", err)
	}
	if n := src.calls.Load(); n > 4 {
		t.Errorf("%d requests after the first unreachable answer; want the fetch stopped (at most one per worker, and one in flight)", n)
	}
	if sum == nil || sum.Failed != 0 || sum.Fetched != 0 || sum.Stopped {
		t.Errorf("summary %+v", sum)
	}
}
