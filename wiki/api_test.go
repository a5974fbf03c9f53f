package wiki_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wiki/wikitest"
)

func apiFixturePages() []wikitest.Page {
	return wikitest.NewPages(
		"Crane", "'''Crane''' may refer to:\n* [[Crane (bird)]], a large wading bird\n* [[Crane (machine)]], a lifting machine\n* [[Crane (surname)]]\n* [[Ichabod Crane]]\n* [[Crane fly]]\n{{disambiguation}}",
		"Crane (bird)", "'''Cranes''' are large, long-legged and long-necked [[bird]]s.\n== Behaviour ==\nCranes dance.",
		"Crane (machine)", "A '''crane''' is a machine used to lift heavy loads.\n== History ==\nGreek cranes.",
		"Crane (surname)", "'''Crane''' is an English surname. {{surname}}",
		"Mouse (rodent)", "#REDIRECT [[Mouse]]",
		"Mouse", "A '''mouse''' is a small [[rodent]].",
	)
}

// recorder replaces the client's Sleep and records the waits.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return nil
}

func newClient(srv *wikitest.APIServer, rec *recorder) *wiki.APIClient {
	c := wiki.NewAPIClient(srv.Endpoint())
	c.Sleep = rec.sleep
	c.MaxRetries = 3
	return c
}

func TestAPIPagesRedirectsDisambiguationMissing(t *testing.T) {
	srv := wikitest.NewAPIServer(apiFixturePages())
	defer srv.Close()
	c := newClient(srv, &recorder{})
	pages, err := c.Pages(context.Background(), []string{"crane", "Crane_(bird)", "Mouse (rodent)", "No such page", "Crane (machine)"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		requested, title string
		missing, dab     bool
		text             string
	}{
		{"Crane", "Crane", false, true, "may refer to"},
		{"Crane (bird)", "Crane (bird)", false, false, "Cranes are large, long-legged and long-necked birds."},
		{"Mouse (rodent)", "Mouse", false, false, "A mouse is a small rodent."},
		{"No such page", "", true, false, ""},
		{"Crane (machine)", "Crane (machine)", false, false, "A crane is a machine used to lift heavy loads."},
	}
	for i, w := range want {
		p := pages[i]
		if p.Err != nil || p.Requested != w.requested || p.Title != w.title || p.Missing != w.missing || p.Disambiguation != w.dab || !strings.Contains(p.Text, w.text) {
			t.Errorf("page %d = %+v, want %+v", i, p, w)
		}
		if strings.Contains(p.Text, "Behaviour") {
			t.Errorf("intro extract of %q holds a later section: %q", p.Title, p.Text)
		}
	}
	if pages[1].Revision != "1002" {
		t.Errorf("revision of Crane (bird) = %q, want 1002 (lastrevid)", pages[1].Revision)
	}
	if srv.Requests() != 1 {
		t.Errorf("5 titles took %d requests, want 1 batch", srv.Requests())
	}
	for i, ua := range srv.UserAgents {
		if !strings.HasPrefix(ua, "lcl-wiki/") || !strings.Contains(ua, "https://") {
			t.Errorf("User-Agent %q does not name the tool and a contact URL", ua)
		}
		if srv.MaxLags[i] != "5" {
			t.Errorf("request %d sent maxlag=%q, want 5", i+1, srv.MaxLags[i])
		}
	}
	// The fixture refuses anonymous clients, as Wikimedia does.
	resp, err := http.Get(srv.Endpoint() + "?action=query&format=json&formatversion=2&titles=Mouse")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("request with Go's default User-Agent: HTTP %d, want 403", resp.StatusCode)
	}
}

func TestAPIBatchesAtMost20Titles(t *testing.T) {
	var pages []string
	var titles []string
	for i := 0; i < 45; i++ {
		pages = append(pages, fmt.Sprintf("Page %d", i), fmt.Sprintf("Text %d.\n== More ==\nbody", i))
		titles = append(titles, fmt.Sprintf("Page %d", i))
	}
	srv := wikitest.NewAPIServer(wikitest.NewPages(pages...))
	defer srv.Close()
	got, err := newClient(srv, &recorder{}).Pages(context.Background(), titles, false)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != 3 {
		t.Errorf("45 titles took %d requests, want 3 (20+20+5)", srv.Requests())
	}
	for i, p := range got {
		if want := fmt.Sprintf("Text %d.", i); p.Text != want {
			t.Fatalf("page %d text %q, want %q", i, p.Text, want)
		}
	}
	// Whole articles come one per request.
	srv.Reset()
	got, err = newClient(srv, &recorder{}).Pages(context.Background(), titles[:3], true)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != 3 || !strings.Contains(got[2].Text, "body") {
		t.Errorf("3 whole articles: %d requests (want 3), text %q (want the whole article)", srv.Requests(), got[2].Text)
	}
}

func TestAPILinksFollowContinuation(t *testing.T) {
	srv := wikitest.NewAPIServer(apiFixturePages())
	defer srv.Close()
	c := newClient(srv, &recorder{})
	links, err := c.Links(context.Background(), "Crane")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Crane (bird)", "Crane (machine)", "Crane (surname)", "Ichabod Crane", "Crane fly"}
	if !reflect.DeepEqual(links, want) {
		t.Errorf("Links(Crane) = %q, want %q", links, want)
	}
	srv.Reset()
	srv.LinkLimit = 2
	links, err = c.Links(context.Background(), "Crane")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(links, want) || srv.Requests() != 3 {
		t.Errorf("Links with plcontinue = %q in %d requests, want %q in 3", links, srv.Requests(), want)
	}
}

func TestAPIRetries(t *testing.T) {
	tests := []struct {
		name      string
		faults    []wikitest.Fault
		wantWaits []time.Duration
		wantErr   string
	}{
		{"429 honours Retry-After", []wikitest.Fault{{Status: http.StatusTooManyRequests, RetryAfter: "7"}}, []time.Duration{7 * time.Second}, ""},
		{"503 with HTTP-date Retry-After in the past", []wikitest.Fault{{Status: 503, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"}}, []time.Duration{0}, ""},
		{"maxlag error waits Retry-After", []wikitest.Fault{{APIError: "maxlag", RetryAfter: "3"}}, []time.Duration{3 * time.Second}, ""},
		{"500 backs off exponentially", []wikitest.Fault{{Status: 500}, {Status: 502}}, []time.Duration{time.Second, 2 * time.Second}, ""},
		{"bounded retries", []wikitest.Fault{{Status: 500}, {Status: 500}, {Status: 500}, {Status: 500}}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, "giving up after 4 attempts"},
		{"API error is not retried", []wikitest.Fault{{APIError: "readonly"}}, nil, "API error readonly"},
		{"403 is not retried", []wikitest.Fault{{Status: 403}}, nil, "HTTP 403"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wikitest.NewAPIServer(apiFixturePages())
			defer srv.Close()
			for i, f := range tt.faults {
				srv.Fail(i+1, f)
			}
			rec := &recorder{}
			pages, err := newClient(srv, rec).Pages(context.Background(), []string{"Mouse"}, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil || pages[0].Title != "Mouse" || pages[0].Text == "" {
				t.Fatalf("Pages = %+v, %v; want the Mouse page after retrying", pages, err)
			}
			if !reflect.DeepEqual(rec.waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", rec.waits, tt.wantWaits)
			}
		})
	}
}

func TestAPIConcurrencyLimit(t *testing.T) {
	srv := wikitest.NewAPIServer(apiFixturePages())
	defer srv.Close()
	var inflight, most atomic.Int32
	release := make(chan struct{})
	srv.OnRequest = func(int) {
		n := inflight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inflight.Add(-1)
	}
	c := newClient(srv, &recorder{})
	c.Concurrency = 2
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Pages(context.Background(), []string{"Mouse"}, true)
		}()
	}
	for srv.Requests() < 6 {
		// Let the requests through one at a time; at most 2 may be waiting here.
		release <- struct{}{}
	}
	close(release)
	wg.Wait()
	if most.Load() > 2 {
		t.Errorf("%d requests in flight at once, want at most Concurrency=2", most.Load())
	}
}

// A host whose name does not resolve is not retried: one attempt, no
// waits, an error wrapping ErrUnreachable without net/http's "Get URL".
func TestAPIUnreachableHostIsNotRetried(t *testing.T) {
	rec := &recorder{}
	c := wiki.NewAPIClient("https://en.wikipedia.invalid/w/api.php")
	c.Sleep, c.MaxRetries = rec.sleep, 5
	var dials atomic.Int32
	c.HTTP = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "en.wikipedia.invalid", IsNotFound: true}}
	}}}
	_, err := c.Pages(context.Background(), []string{"Crane"}, false)
	if !errors.Is(err, wiki.ErrUnreachable) || strings.Contains(err.Error(), "Get ") || !strings.Contains(err.Error(), "no such host") {
		t.Fatalf("error %v; want ErrUnreachable with the resolver's reason and no URL", err)
	}
	if dials.Load() != 1 || len(rec.waits) != 0 {
		t.Errorf("%d dials, waits %v; want one attempt and no retry", dials.Load(), rec.waits)
	}
}

// A refused connection (nothing listens at the endpoint's port) is not
// retried: one attempt, no waits, ErrUnreachable; it took six attempts
// with backoff, ~94 s for ten classes (issue 48, item 5).
func TestAPIRefusedConnectionIsNotRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the port now refuses
	rec := &recorder{}
	c := wiki.NewAPIClient("http://" + addr + "/w/api.php")
	c.Sleep, c.MaxRetries = rec.sleep, 5
	c.HTTP = &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	_, err = c.Pages(context.Background(), []string{"Crane"}, false)
	if !errors.Is(err, wiki.ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("endpoint http://%s/w/api.php refusing: %v; want ErrUnreachable saying the connection was refused", addr, err)
	}
	if len(rec.waits) != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("endpoint http://%s/w/api.php refusing: waits %v over %v; want one attempt, no retry", addr, rec.waits, time.Since(start))
	}
}

// Each retry says what failed and when the next attempt comes: a fetch
// that retries is never silent (issue 48, item 5).
func TestAPIRetriesAreLogged(t *testing.T) {
	srv := wikitest.NewAPIServer(apiFixturePages())
	defer srv.Close()
	srv.Fail(1, wikitest.Fault{Status: 500})
	srv.Fail(2, wikitest.Fault{Status: 502})
	c := newClient(srv, &recorder{})
	var lines []string
	c.Logf = func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	if _, err := c.Pages(context.Background(), []string{"Mouse"}, false); err != nil {
		t.Fatal(err)
	}
	want := []string{"HTTP 500 Internal Server Error; retry 1 of 3 in 1s", "HTTP 502 Bad Gateway; retry 2 of 3 in 2s"}
	if len(lines) != len(want) {
		t.Fatalf("two failed attempts logged %q; want one line per retry", lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], srv.Endpoint()) || !strings.Contains(lines[i], "titles=Mouse") || !strings.Contains(lines[i], w) {
			t.Errorf("retry %d logged %q; want the endpoint, the titles and %q", i+1, lines[i], w)
		}
	}
}

// An endpoint that is not an http(s) URL with a host is refused before any
// request (issue 48, item 5: "not a url" took ~94 s of retries).
func TestCheckEndpoint(t *testing.T) {
	for _, e := range []string{wiki.DefaultEndpoint, "http://127.0.0.1:8080/w/api.php", "https://wiki.example.org/api.php"} {
		if err := wiki.CheckEndpoint(e); err != nil {
			t.Errorf("--endpoint %q: %v, want accepted", e, err)
		}
	}
	for _, e := range []string{"not a url", "", "en.wikipedia.org/w/api.php", "ftp://example.org/api.php", "http:///api.php",
		"http://example.org:0/api.php", "http://example.org:99999/api.php", "http://example.org/api.php?action=query", "mailto:x@example.org", "http://[::1/api.php"} {
		if err := wiki.CheckEndpoint(e); err == nil {
			t.Errorf("--endpoint %q accepted, want refused", e)
		}
	}
}

// Probe: any HTTP answer, whatever its status, is an endpoint that
// answers; one that accepts and never answers is named within the
// timeout; one that refuses cannot be reached.
func TestAPIProbe(t *testing.T) {
	ctx := context.Background()
	busy := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	answering, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go busy.Serve(answering)
	defer busy.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := silent.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + refusing.Addr().String() + "/w/api.php"
	refusing.Close()
	quiet := "http://" + silent.Addr().String() + "/w/api.php"
	for _, tc := range []struct {
		endpoint, want string
		unreachable    bool
	}{
		{"http://" + answering.Addr().String() + "/w/api.php", "", false},
		{quiet, "api: " + quiet + " did not answer within 300ms (it accepts connections but sends nothing back): check --endpoint", false},
		{refused, "api: " + refused + " cannot be reached", true},
	} {
		start := time.Now()
		err := wiki.NewAPIClient(tc.endpoint).Probe(ctx, 300*time.Millisecond)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want))) ||
			errors.Is(err, wiki.ErrUnreachable) != tc.unreachable || time.Since(start) > 5*time.Second {
			t.Errorf("%s: %v after %v, want %q", tc.endpoint, err, time.Since(start), tc.want)
		}
	}
}
