package wiki

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultEndpoint is English Wikipedia's Action API.
const DefaultEndpoint = "https://en.wikipedia.org/w/api.php"

// DefaultUserAgent follows the Wikimedia User-Agent policy: a tool name,
// version and a way to reach its authors.
const DefaultUserAgent = "lcl-wiki/0.1 (https://github.com/lcl-project/lcl; label-similarity curriculum learning) Go-net/http"

// extractBatch is TextExtracts' limit of intro extracts per request
// (exlimit max 20); whole-article extracts come one per request.
const extractBatch = 20

// APIClient is the PageSource over the MediaWiki Action API: plain-text
// extracts (prop=extracts&explaintext), disambiguation detection
// (prop=pageprops), revision ids (prop=info), redirects=1, continuation.
// It sends maxlag, honours 429/503 and maxlag errors with Retry-After, retries
// 5xx and network errors with exponential backoff up to MaxRetries times, and
// runs at most Concurrency requests at once. Safe for concurrent use.
type APIClient struct {
	Endpoint    string
	UserAgent   string
	HTTP        *http.Client
	MaxLag      int           // seconds; sent as maxlag (default 5)
	MaxRetries  int           // retries after the first attempt (default 5)
	Backoff     time.Duration // first retry wait without Retry-After (default 1s), doubled each retry
	MaxBackoff  time.Duration // cap on a backoff wait (default 1m); Retry-After is honoured up to MaxRetryAfter
	Concurrency int           // requests in flight at once (default 2)
	// Logf, if set, gets a line before each retry: what failed, and when
	// the next attempt comes (a fetch shows progress while it retries).
	Logf func(format string, a ...any)
	// Sleep waits d or until ctx is done; tests replace it to record waits.
	Sleep func(ctx context.Context, d time.Duration) error

	once sync.Once
	sem  chan struct{}
}

// MaxRetryAfter bounds how long one Retry-After may make the client wait.
const MaxRetryAfter = 5 * time.Minute

// CheckEndpoint refuses an endpoint that is not an http:// or https:// URL
// with a host (and no query or fragment: requests append their own query),
// before any request is sent.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL (%v): want the http:// or https:// URL of a MediaWiki api.php, as %s", withoutURL(err), DefaultEndpoint)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return fmt.Errorf("not an http:// or https:// URL with a host: want the URL of a MediaWiki api.php, as %s", DefaultEndpoint)
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Errorf("port %s: want 1 to 65535", u.Port())
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("has a query or fragment: want the URL of a MediaWiki api.php alone, as %s", DefaultEndpoint)
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// NewAPIClient returns a client for endpoint ("" = DefaultEndpoint) with the
// defaults.
func NewAPIClient(endpoint string) *APIClient {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return &APIClient{Endpoint: endpoint}
}

// Name is "api".
func (c *APIClient) Name() string { return "api" }

func (c *APIClient) init() {
	c.once.Do(func() {
		if c.UserAgent == "" {
			c.UserAgent = DefaultUserAgent
		}
		if c.HTTP == nil {
			c.HTTP = &http.Client{Timeout: 60 * time.Second}
		}
		if c.MaxLag == 0 {
			c.MaxLag = 5
		}
		if c.MaxRetries == 0 {
			c.MaxRetries = 5
		}
		if c.Backoff == 0 {
			c.Backoff = time.Second
		}
		if c.MaxBackoff == 0 {
			c.MaxBackoff = time.Minute
		}
		if c.Concurrency <= 0 {
			c.Concurrency = 2
		}
		if c.Sleep == nil {
			c.Sleep = sleepCtx
		}
		c.sem = make(chan struct{}, c.Concurrency)
	})
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// apiPage is one page of a formatversion=2 query response.
type apiPage struct {
	PageID    int               `json:"pageid"`
	Title     string            `json:"title"`
	Missing   bool              `json:"missing"`
	Invalid   bool              `json:"invalid"`
	Extract   *string           `json:"extract"`
	PageProps map[string]string `json:"pageprops"`
	LastRevID int64             `json:"lastrevid"`
	Links     []struct {
		NS    int    `json:"ns"`
		Title string `json:"title"`
	} `json:"links"`
}

type apiResponse struct {
	Error *struct {
		Code string `json:"code"`
		Info string `json:"info"`
	} `json:"error"`
	Continue map[string]json.RawMessage `json:"continue"`
	Query    struct {
		Normalized []struct{ From, To string } `json:"normalized"`
		Redirects  []struct{ From, To string } `json:"redirects"`
		Pages      []apiPage                   `json:"pages"`
	} `json:"query"`
}

// queryResult merges the responses of one continued query.
type queryResult struct {
	alias map[string]string // normalized and redirect edges: from → to
	pages map[string]*apiPage
	order []string
}

// query runs action=query with params, following continuation.
func (c *APIClient) query(ctx context.Context, params url.Values) (*queryResult, error) {
	c.init()
	res := &queryResult{alias: map[string]string{}, pages: map[string]*apiPage{}}
	base := url.Values{}
	for k, v := range params {
		base[k] = v
	}
	base.Set("action", "query")
	base.Set("format", "json")
	base.Set("formatversion", "2")
	base.Set("maxlag", strconv.Itoa(c.MaxLag))
	cont := map[string]string{}
	for round := 0; ; round++ {
		if round == 100 {
			return nil, fmt.Errorf("api: %s: continuation did not end after 100 requests", c.Endpoint)
		}
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for k, v := range cont {
			q.Set(k, v)
		}
		r, err := c.do(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, e := range r.Query.Normalized {
			res.alias[e.From] = e.To
		}
		for _, e := range r.Query.Redirects {
			res.alias[e.From] = e.To
		}
		for i := range r.Query.Pages {
			p := &r.Query.Pages[i]
			old, ok := res.pages[p.Title]
			if !ok {
				res.pages[p.Title] = p
				res.order = append(res.order, p.Title)
				continue
			}
			if p.Extract != nil {
				old.Extract = p.Extract
			}
			if p.PageProps != nil {
				old.PageProps = p.PageProps
			}
			if p.LastRevID != 0 {
				old.LastRevID = p.LastRevID
			}
			old.Links = append(old.Links, p.Links...)
		}
		if len(r.Continue) == 0 {
			return res, nil
		}
		cont = map[string]string{}
		for k, raw := range r.Continue {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw) // a number
			}
			cont[k] = s
		}
	}
}

// resolve follows normalisation and redirect edges from a requested title.
func (r *queryResult) resolve(title string) (string, bool) {
	redirected := false
	for hops := 0; hops < 10; hops++ {
		to, ok := r.alias[title]
		if !ok {
			break
		}
		redirected = redirected || NormalizeTitle(to) != NormalizeTitle(title)
		title = to
	}
	return title, redirected
}

// ProbeTimeout is how long Probe waits for the endpoint's first answer: a
// MediaWiki answers in well under a second, and a fetch's own retries give
// a slow moment time later.
const ProbeTimeout = 5 * time.Second

// Probe sends one small request (siteinfo) and waits up to timeout for
// any HTTP answer, whatever its status, so that an endpoint that accepts
// connections and never answers stops a fetch at once, naming it, rather
// than after every class's retries (~6 minutes); one that cannot be
// reached is ErrUnreachable. Other failures are left to the requests'
// retries.
func (c *APIClient) Probe(ctx context.Context, timeout time.Duration) error {
	c.init()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q := url.Values{"action": {"query"}, "meta": {"siteinfo"}, "format": {"json"}, "maxlag": {strconv.Itoa(c.MaxLag)}}
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, c.Endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("api: %s: %v", c.Endpoint, err)
	}
	req.Header.Set("User-Agent", c.UserAgent)
	resp, err := c.HTTP.Do(req)
	switch {
	case err == nil:
		resp.Body.Close()
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case unreachable(err):
		return fmt.Errorf("api: %s %w (%v)", c.Endpoint, ErrUnreachable, withoutURL(err))
	case pctx.Err() != nil:
		return fmt.Errorf("api: %s did not answer within %s (it accepts connections but sends nothing back): check --endpoint", c.Endpoint, timeout)
	}
	return nil
}

// Probe checks that src answers (APIClient.Probe with ProbeTimeout) when
// its pages come from the API; any other source needs no check.
func Probe(ctx context.Context, src Source) error {
	if a, ok := src.(*ArticleSource); ok {
		if c, ok := a.Pages.(*APIClient); ok {
			return c.Probe(ctx, ProbeTimeout)
		}
	}
	return nil
}

// ErrUnreachable is the API's host not existing for this machine (its
// name does not resolve, or no route leads to it) or refusing the
// connection (nothing listens at the endpoint's port): retrying cannot
// help, and Fetch stops at the first.
var ErrUnreachable = errors.New("cannot be reached")

// unreachable reports whether err says the host cannot be reached at all
// (a name that does not resolve, no route to its network, a refused
// connection), as opposed to a failure worth retrying (a timeout, a reset
// connection, a busy server).
func unreachable(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return true
	}
	return errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ECONNREFUSED)
}

// httpError is a failed attempt, with what the server asked for.
type httpError struct {
	status     int
	retryAfter time.Duration
	hasRetry   bool
	msg        string
	retryable  bool
	cause      error // the transport's error, if any
}

func (e *httpError) Error() string { return e.msg }

func (e *httpError) Unwrap() error { return e.cause }

// do sends one request, retrying as documented on APIClient.
func (c *APIClient) do(ctx context.Context, q url.Values) (*apiResponse, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	what := "titles=" + q.Get("titles")
	var last error
	for attempt := 0; attempt <= c.MaxRetries; attempt++ {
		if attempt > 0 {
			wait := c.Backoff << (attempt - 1)
			if wait > c.MaxBackoff || wait <= 0 {
				wait = c.MaxBackoff
			}
			var he *httpError
			if errors.As(last, &he) && he.hasRetry {
				wait = min(he.retryAfter, MaxRetryAfter)
			}
			if c.Logf != nil {
				c.Logf("api: %s (%s): %v; retry %d of %d in %s", c.Endpoint, clip(what, 80), last, attempt, c.MaxRetries, wait)
			}
			if err := c.Sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		r, err := c.attempt(ctx, q)
		if err == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var he *httpError
		if errors.As(err, &he) && !he.retryable {
			return nil, fmt.Errorf("api: %s (%s): %w", c.Endpoint, what, err)
		}
		if unreachable(err) {
			return nil, fmt.Errorf("api: %s %w (%v)", c.Endpoint, ErrUnreachable, err)
		}
		last = err
	}
	return nil, fmt.Errorf("api: %s (%s): giving up after %d attempts: %w", c.Endpoint, what, c.MaxRetries+1, last)
}

// withoutURL drops net/http's "Get URL: " from err: the messages already
// name the endpoint and the titles, and the URL repeats both, escaped.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *APIClient) attempt(ctx context.Context, q url.Values) (*apiResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return nil, &httpError{msg: err.Error()}
	}
	req.Header.Set("User-Agent", c.UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, &httpError{msg: withoutURL(err).Error(), retryable: true, cause: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, &httpError{msg: "reading response: " + err.Error(), retryable: true}
	}
	ra, hasRA := parseRetryAfter(resp.Header.Get("Retry-After"))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return nil, &httpError{status: resp.StatusCode, retryAfter: ra, hasRetry: hasRA, retryable: true,
			msg: fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	case resp.StatusCode >= 500:
		return nil, &httpError{status: resp.StatusCode, retryable: true, msg: fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	case resp.StatusCode != http.StatusOK:
		return nil, &httpError{status: resp.StatusCode, msg: fmt.Sprintf("HTTP %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), firstLine(string(body)))}
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &httpError{msg: fmt.Sprintf("bad JSON response: %v", err), retryable: true}
	}
	if r.Error != nil {
		if r.Error.Code == "maxlag" {
			if !hasRA {
				ra, hasRA = 5*time.Second, true
			}
			return nil, &httpError{retryAfter: ra, hasRetry: hasRA, retryable: true, msg: "maxlag: " + r.Error.Info}
		}
		return nil, &httpError{msg: fmt.Sprintf("API error %s: %s", r.Error.Code, r.Error.Info)}
	}
	return &r, nil
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// Pages implements PageSource: intro extracts in batches of 20 titles, or
// whole-article extracts one title per request (TextExtracts' limits).
func (c *APIClient) Pages(ctx context.Context, titles []string, full bool) ([]Page, error) {
	out := make([]Page, len(titles))
	batch := extractBatch
	if full {
		batch = 1
	}
	uniq := []string{}
	seen := map[string]bool{}
	for i, t := range titles {
		out[i].Requested = NormalizeTitle(t)
		if !seen[out[i].Requested] && out[i].Requested != "" {
			seen[out[i].Requested] = true
			uniq = append(uniq, out[i].Requested)
		}
	}
	found := map[string]Page{}
	for start := 0; start < len(uniq); start += batch {
		chunk := uniq[start:min(start+batch, len(uniq))]
		q := url.Values{}
		q.Set("titles", strings.Join(chunk, "|"))
		q.Set("redirects", "1")
		q.Set("prop", "extracts|pageprops|info")
		q.Set("ppprop", "disambiguation")
		q.Set("explaintext", "1")
		q.Set("exsectionformat", "plain")
		q.Set("exlimit", strconv.Itoa(len(chunk)))
		if !full {
			q.Set("exintro", "1")
		}
		res, err := c.query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, t := range chunk {
			final, _ := res.resolve(t)
			p := Page{Requested: t, Title: final}
			ap, ok := res.pages[final]
			switch {
			case !ok:
				p.Err = fmt.Errorf("api: %s: response lacks page %q (asked for %q)", c.Endpoint, final, t)
			case ap.Missing || ap.Invalid:
				p.Missing, p.Title = true, ""
			default:
				_, p.Disambiguation = ap.PageProps["disambiguation"]
				if ap.Extract != nil {
					p.Text = *ap.Extract
				}
				if ap.LastRevID != 0 {
					p.Revision = strconv.FormatInt(ap.LastRevID, 10)
				}
			}
			found[t] = p
		}
	}
	for i := range out {
		if p, ok := found[out[i].Requested]; ok {
			out[i] = p
		} else {
			out[i].Missing = true
		}
	}
	return out, nil
}

// Links implements PageSource with prop=links (main namespace, continued).
func (c *APIClient) Links(ctx context.Context, title string) ([]string, error) {
	q := url.Values{}
	q.Set("titles", NormalizeTitle(title))
	q.Set("redirects", "1")
	q.Set("prop", "links")
	q.Set("plnamespace", "0")
	q.Set("pllimit", "max")
	res, err := c.query(ctx, q)
	if err != nil {
		return nil, err
	}
	final, _ := res.resolve(NormalizeTitle(title))
	p, ok := res.pages[final]
	if !ok || p.Missing {
		return nil, nil
	}
	out := make([]string, 0, len(p.Links))
	for _, l := range p.Links {
		if l.NS == 0 {
			out = append(out, l.Title)
		}
	}
	return out, nil
}
