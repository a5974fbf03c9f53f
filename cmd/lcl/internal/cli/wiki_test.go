package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wiki/wikitest"
)

func storedArticles(t *testing.T, dir, set string) map[string]simstore.Article {
	t.Helper()
	st, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arts, err := st.ListArticles(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]simstore.Article{}
	for _, a := range arts {
		m[a.ClassID] = a
	}
	return m
}

func TestWikiFetchWordNetImageNet(t *testing.T) {
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", "imagenet", "--source", "wordnet")
	if code != 0 || !strings.Contains(out, "fetched 1000 (fallback 0), cached 0, failed 0") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	arts := storedArticles(t, store, "imagenet")
	if len(arts) != 1000 {
		t.Fatalf("%d articles stored, want 1000", len(arts))
	}
	if a := arts["n02012849"]; a.Source != "wordnet" || a.Reason != "wordnet" || !strings.HasPrefix(a.Text, "crane: large long-necked wading bird") || a.Checksum == "" {
		t.Errorf("crane article = %+v", a)
	}
	code, out, _ = runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", "imagenet")
	if code != 0 || !strings.Contains(out, "fetched 0 (fallback 0), cached 1000") {
		t.Errorf("second fetch: exit %d, %s", code, out)
	}
	code, out, _ = runLCL(context.Background(), t, "--store", store, "wiki", "show", "n02012849")
	if code != 0 || !strings.Contains(out, "Source:    wordnet") || !strings.Contains(out, "crane: large long-necked wading bird") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	code, out, _ = runLCL(context.Background(), t, "--store", store, "wiki", "resolve", "--synsets", "imagenet")
	if code != 0 || !strings.Contains(out, "n02012849  n02012849  wordnet  -      wordnet") {
		t.Errorf("resolve (stored): exit %d\n%s", code, firstLines(out, 5))
	}
}

// hasRow reports whether a table line starts with the given columns.
func hasRow(out string, cols ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < len(cols)+1 {
			continue
		}
		// Column 2 is the wnid, repeated for label files: skip it.
		got := append([]string{f[0]}, f[2:]...)
		if strings.HasPrefix(strings.Join(got, " "), strings.Join(cols, " ")) {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// apiClasses are classes for the fixture wiki: ambiguous ones, one whose
// article is missing but whose hypernym has one (kit fox → fox) and one with
// neither (tench → its WordNet document).
var apiClasses = []string{"n02012849", "n03126707", "n07747607", "n03793489", "n02076196", "n02119789", "n01440764"}

func wikiFixture(t *testing.T) (pages []wikitest.Page, labelFile string) {
	t.Helper()
	pages, err := wikitest.ReadPages("../../../../testdata/wiki/candidates.wiki")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, wikitest.NewPages("Fox", "'''Foxes''' are small to medium-sized, omnivorous mammals belonging to several genera of the family Canidae, with a flattened skull and a long bushy tail.")...)
	for i := range pages {
		pages[i].ID, pages[i].Revision = i+1, 1001+i
	}
	labelFile = filepath.Join(t.TempDir(), "classes.txt")
	if err := os.WriteFile(labelFile, []byte(strings.Join(apiClasses, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return pages, labelFile
}

func TestWikiFetchAPI(t *testing.T) {
	pages, labelFile := wikiFixture(t)
	srv := wikitest.NewAPIServer(pages)
	defer srv.Close()
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint())
	if code != 0 || !strings.Contains(out, "fetched 7 (fallback 2), cached 0, failed 0") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	arts := storedArticles(t, store, labelFile)
	want := map[string]struct{ title, source, reason string }{
		"n02012849": {"Crane (bird)", "api", "scored"},
		"n03126707": {"Crane (machine)", "api", "scored"},
		"n07747607": {"Orange (fruit)", "api", "scored"},
		"n03793489": {"Computer mouse", "api", "scored"},
		"n02076196": {"Pinniped", "api", "scored"},
		"n02119789": {"Fox", "api", "fallback"},
		"n01440764": {"", "wordnet", "fallback"},
	}
	for id, w := range want {
		a := arts[id]
		if a.Title != w.title || a.Source != w.source || !strings.HasPrefix(a.Reason, w.reason) || a.Text == "" {
			t.Errorf("%s: title %q source %q reason %q; want %q %q %s…", id, a.Title, a.Source, a.Reason, w.title, w.source, w.reason)
		}
	}
	if a := arts["n02012849"]; !strings.Contains(a.Text, "Behaviour") || a.Revision == "" {
		t.Errorf("crane bird: want the whole article with a revision, got revision %q text %q", a.Revision, a.Text)
	}
	if r := arts["n02119789"].Reason; !strings.Contains(r, "hypernym n02118333 (fox)") {
		t.Errorf("kit fox reason %q does not name the hypernym used", r)
	}
	if r := arts["n01440764"].Reason; !strings.Contains(r, "WordNet document") {
		t.Errorf("tench reason %q does not say WordNet document", r)
	}
	code, out, _ = runLCL(context.Background(), t, "--store", store, "wiki", "resolve", "--synsets", labelFile)
	if code != 0 || !strings.Contains(out, "Crane (bird)") || !strings.Contains(out, "fallback: no candidate article") {
		t.Errorf("resolve (stored): exit %d\n%s", code, out)
	}
	// Live resolution prints the same decisions with their reasons.
	code, out, _ = runLCL(context.Background(), t, "--store", store, "wiki", "resolve", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint())
	if code != 0 || !hasRow(out, "n03126707", "scored", "Crane (machine)") || !hasRow(out, "n02119789", "fallback", "Fox") || !hasRow(out, "n01440764", "fallback", "-") {
		t.Errorf("resolve --source api: exit %d\n%s", code, out)
	}
}

func TestWikiFetchOverrides(t *testing.T) {
	pages, labelFile := wikiFixture(t)
	srv := wikitest.NewAPIServer(pages)
	defer srv.Close()
	ov := filepath.Join(t.TempDir(), "overrides.tsv")
	os.WriteFile(ov, []byte("# my choices\nn07747607\tOrange (colour)\tOrange_S.A.\n"), 0o644)
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint(), "--overrides", ov)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	a := storedArticles(t, store, labelFile)["n07747607"]
	if a.Title != "Orange (colour) | Orange S.A." || a.Reason != "override" || !strings.Contains(a.Text, "spectrum") || !strings.Contains(a.Text, "telecommunications") || a.Revision == "" {
		t.Errorf("overridden orange = %+v", a)
	}
	os.WriteFile(ov, []byte("n07747607\tOrange\n"), 0o644)
	code, out, _ = runLCL(context.Background(), t, "--store", t.TempDir(), "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint(), "--overrides", ov)
	if code != 1 || !strings.Contains(out, "failed n07747607: override n07747607: \"Orange\" is a disambiguation page") {
		t.Errorf("override naming a disambiguation page: exit %d\n%s", code, out)
	}
}

// TestWikiFetchResumes interrupts a fetch midway, then checks that a rerun
// sends exactly the requests a fresh fetch of the missing classes sends.
func TestWikiFetchResumes(t *testing.T) {
	pages, labelFile := wikiFixture(t)
	srv := wikitest.NewAPIServer(pages)
	defer srv.Close()
	store := t.TempDir()
	args := []string{"--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint(), "--concurrency", "1"}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.OnRequest = func(n int) {
		if n == 12 {
			cancel() // Ctrl-C while request 12 is in flight
		}
	}
	code, out, errs := runLCL(ctx, t, args...)
	if code != ExitCancelled || !strings.Contains(out, "stopped early") {
		t.Fatalf("interrupted fetch: exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitCancelled, out, errs)
	}
	done := storedArticles(t, store, labelFile)
	if len(done) == 0 || len(done) >= len(apiClasses) {
		t.Fatalf("interrupted fetch stored %d of %d classes; want some but not all", len(done), len(apiClasses))
	}
	var missing []string
	for _, id := range apiClasses {
		if _, ok := done[id]; !ok {
			missing = append(missing, id)
		}
	}

	srv.OnRequest = nil
	srv.Reset()
	code, out, errs = runLCL(context.Background(), t, args...)
	want := fmt.Sprintf("fetched %d", len(missing))
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("cached %d", len(done))) {
		t.Fatalf("rerun: exit %d, want %q and cached %d\nstdout: %s\nstderr: %s", code, want, len(done), out, errs)
	}
	rerunRequests := srv.Requests()
	if got := storedArticles(t, store, labelFile); len(got) != len(apiClasses) {
		t.Errorf("after the rerun %d classes are stored, want %d", len(got), len(apiClasses))
	}

	// The requests a fresh fetch of only the missing classes needs.
	onlyMissing := filepath.Join(t.TempDir(), "missing.txt")
	os.WriteFile(onlyMissing, []byte(strings.Join(missing, "\n")+"\n"), 0o644)
	srv.Reset()
	code, _, _ = runLCL(context.Background(), t, "--store", t.TempDir(), "wiki", "fetch", "--synsets", onlyMissing, "--source", "api", "--endpoint", srv.Endpoint(), "--concurrency", "1")
	if code != 0 {
		t.Fatal("fresh fetch of the missing classes failed")
	}
	if rerunRequests != srv.Requests() {
		t.Errorf("rerun sent %d requests; fetching only the %d missing classes sends %d", rerunRequests, len(missing), srv.Requests())
	}
	t.Logf("interrupted after 12 requests with %d/%d stored; rerun fetched %d classes in %d requests", len(done), len(apiClasses), len(missing), rerunRequests)
}

func TestWikiFetchDumpReportsCorruptStream(t *testing.T) {
	pages, labelFile := wikiFixture(t)
	files, err := wikitest.WriteDump(t.TempDir(), pages, wikitest.DumpOptions{PagesPerStream: 10, Truncate: []string{"Crane (machine)"}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := files.StreamOf("Crane (machine)")
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "dump:"+files.Path)
	// Both crane classes read the "Crane (machine)" candidate, so both fail
	// (no decision on partial information); the other classes are stored.
	if code != 1 || !strings.Contains(out, "failed 2") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	for _, id := range []string{"n02012849", "n03126707"} {
		if !strings.Contains(out, "failed "+id+": ") {
			t.Errorf("failed list lacks %s:\n%s", id, out)
		}
	}
	if !strings.Contains(out, `page "Crane (machine)": stream at byte offset `+fmt.Sprint(st.Offset)) {
		t.Errorf("failed list does not name the title and byte offset %d:\n%s", st.Offset, out)
	}
	arts := storedArticles(t, store, labelFile)
	if len(arts) != len(apiClasses)-2 || arts["n07747607"].Title != "Orange (fruit)" || arts["n07747607"].Source != "dump" {
		t.Errorf("stored %d articles (want %d); orange = %+v", len(arts), len(apiClasses)-2, arts["n07747607"])
	}
}

func TestWikiFetchDir(t *testing.T) {
	_, labelFile := wikiFixture(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "n02012849.txt"), []byte("My own text about cranes.\n"), 0o644)
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "dir:"+dir)
	if code != 0 || !strings.Contains(out, "fetched 7 (fallback 6)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	arts := storedArticles(t, store, labelFile)
	if a := arts["n02012849"]; a.Text != "My own text about cranes." || a.Source != "dir" || !strings.HasPrefix(a.Reason, "file") {
		t.Errorf("crane from dir = %+v", a)
	}
	if a := arts["n01440764"]; a.Source != "wordnet" || !strings.HasPrefix(a.Reason, "fallback: no n01440764.txt") {
		t.Errorf("tench without a file = %+v", a)
	}
}

func TestWikiUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"wiki", "fetch", "--synsets", "imagenet", "--source", "web"},
		{"wiki", "fetch", "--synsets", "imagenet", "--source", "dump:"},
		{"wiki", "fetch"},
		{"wiki", "show"},
		{"wiki", "fetch", "--synsets", "imagenet", "--overrides", "x.tsv"},
	} {
		code, _, errs := runLCL(context.Background(), t, append([]string{"--store", t.TempDir()}, args...)...)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, ExitUsage, errs)
		}
	}
	code, _, errs := runLCL(context.Background(), t, "--store", t.TempDir(), "wiki", "show", "n02012849")
	if code != ExitFailure || !strings.Contains(errs, "no stored document") {
		t.Errorf("show of a class never fetched: exit %d, %s", code, errs)
	}
}

// --concurrency out of range is refused at once, naming the flag and the
// range: 100000000 ran lcl out of memory, -5 was clamped to 1 without a
// word (issue 48, item 4).
func TestWikiConcurrencyRange(t *testing.T) {
	for _, cmd := range []string{"fetch", "resolve"} {
		for _, v := range []string{"100000000", "65", "0", "-5"} {
			start := time.Now()
			r := cliRun(t, "--store", t.TempDir(), "wiki", cmd, "--synsets", "imagenet", "--concurrency", v)
			wantOneLine(t, "wiki "+cmd+" --concurrency "+v, r, ExitUsage, "--concurrency "+v+": want 1 to 64")
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("wiki %s --concurrency %s: refused after %v, want at once", cmd, v, d)
			}
		}
	}
}

// --min-score is a finite score ≥ 0 (NaN accepted no article at all).
func TestWikiMinScoreRange(t *testing.T) {
	for _, v := range []string{"NaN", "Inf", "-0.5"} {
		r := cliRun(t, "--store", t.TempDir(), "wiki", "fetch", "--synsets", "imagenet", "--source", "api", "--min-score", v)
		want := "--min-score " + map[string]string{"NaN": "NaN", "Inf": "+Inf", "-0.5": "-0.5"}[v] + ": want a finite value ≥ 0"
		wantOneLine(t, "wiki fetch --min-score "+v, r, ExitUsage, want)
	}
}

// --source api with an endpoint that is not a URL is refused before
// anything opens; one whose port refuses stops at the first refusal. Both
// took ~94 s of silent retries (issue 48, item 5).
func TestWikiFetchAPIEndpointFailsFast(t *testing.T) {
	r := cliRun(t, "--store", t.TempDir(), "wiki", "fetch", "--synsets", "imagenet", "--source", "api", "--endpoint", "not a url")
	wantOneLine(t, `wiki fetch --endpoint "not a url"`, r, ExitUsage, `--endpoint "not a url": not an http:// or https:// URL with a host`)

	_, labelFile := wikiFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String() + "/w/api.php"
	l.Close() // the port now refuses
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	code, out, errs := runLCL(ctx, t, "--store", t.TempDir(), "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", endpoint)
	if code != ExitFailure || !strings.Contains(errs, endpoint+" cannot be reached") || !strings.Contains(errs, "connection refused") || time.Since(start) > 10*time.Second {
		t.Fatalf("wiki fetch --endpoint %s (refusing): exit %d after %v; want exit 1 within seconds, saying it cannot be reached\nstdout: %s\nstderr: %s", endpoint, code, time.Since(start), out, errs)
	}
}

// An endpoint that accepts connections and never answers is found by a
// first request with a short timeout: one line naming it, in seconds, and
// nothing stored (each class's retries took ~6 minutes; issue 48, item 5).
func TestWikiFetchAPISilentEndpoint(t *testing.T) {
	t.Parallel() // wiki commands, no plugin; they wait out the probe (parallelOK)
	_, labelFile := wikiFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn // accepted and kept open, never answered
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	defer func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	}()
	endpoint := "http://" + l.Addr().String() + "/w/api.php"
	store := filepath.Join(t.TempDir(), "store")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	// The two commands wait out the probe's 5 s side by side (they only
	// wait: one after the other doubled the test's time).
	var wg sync.WaitGroup
	for _, cmd := range []string{"fetch", "resolve"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			code, out, errs := runLCL(ctx, t, "--store", store, "wiki", cmd, "--synsets", labelFile, "--source", "api", "--endpoint", endpoint)
			want := "lcl: api: " + endpoint + " did not answer within 5s (it accepts connections but sends nothing back): check --endpoint\n"
			if code != ExitFailure || errs != want || time.Since(start) > 12*time.Second {
				t.Errorf("wiki %s --endpoint %s (silent): exit %d after %v, stderr %q; want exit 1 within seconds and %q\nstdout: %s",
					cmd, endpoint, code, time.Since(start), errs, want, out)
			}
		}()
	}
	wg.Wait()
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("the refused fetch left the store %s (%v)", store, err)
	}
}

// The endpoint's probe does not stop a fetch that needs no request: with
// every class stored, a rerun against a host that cannot be reached (an
// offline machine) still reports them cached.
func TestWikiFetchAPICachedOffline(t *testing.T) {
	pages, labelFile := wikiFixture(t)
	srv := wikitest.NewAPIServer(pages)
	store := t.TempDir()
	code, out, errs := runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", srv.Endpoint())
	srv.Close()
	if code != 0 {
		t.Fatalf("first fetch: exit %d\n%s%s", code, out, errs)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String() + "/w/api.php"
	l.Close() // the port now refuses
	code, out, errs = runLCL(context.Background(), t, "--store", store, "wiki", "fetch", "--synsets", labelFile, "--source", "api", "--endpoint", endpoint)
	if code != 0 || !strings.Contains(out, "fetched 0 (fallback 0), cached 7, failed 0") {
		t.Errorf("rerun offline: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
