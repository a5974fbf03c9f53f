package wikitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/lcl-project/lcl/wiki"
)

// Fault is a scripted failure for one request.
type Fault struct {
	Status     int    // HTTP status (429, 500, 503); 200 with APIError set
	RetryAfter string // Retry-After header value, if any
	APIError   string // MediaWiki error code in a 200 response ("maxlag")
}

// APIServer is a local MediaWiki Action API (api.php) over fixture pages. It
// answers action=query with titles, redirects=1, prop=extracts (exintro,
// explaintext, exlimit: at most 20 intro extracts or 1 whole-article extract
// per response, the rest continued), prop=pageprops (disambiguation),
// prop=info (lastrevid) and prop=links (pllimit, plcontinue), in
// formatversion=2 JSON. It refuses requests without a User-Agent naming the
// tool (403), like Wikimedia does.
type APIServer struct {
	*httptest.Server
	pages map[string]Page

	mu       sync.Mutex
	requests int
	titles   []string // every title requested, in order
	faults   map[int]Fault
	// OnRequest, if set, is called with the 1-based request number before
	// the request is answered.
	OnRequest func(n int)
	// LinkLimit is the number of links per response (default 10).
	LinkLimit int
	// UserAgents and MaxLags hold the User-Agent header and maxlag
	// parameter of every request.
	UserAgents, MaxLags []string
}

// NewAPIServer starts a server over pages; Close it when done.
func NewAPIServer(pages []Page) *APIServer {
	s := &APIServer{pages: map[string]Page{}, faults: map[int]Fault{}, LinkLimit: 10}
	for _, p := range pages {
		s.pages[p.Title] = p
	}
	s.Server = httptest.NewServer(s)
	return s
}

// Endpoint is the api.php URL.
func (s *APIServer) Endpoint() string { return s.URL + "/w/api.php" }

// Fail scripts a fault for the n-th request (1-based).
func (s *APIServer) Fail(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[n] = f
}

// Requests is the number of requests received.
func (s *APIServer) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Titles returns every title requested so far.
func (s *APIServer) Titles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.titles...)
}

// Reset clears the counters.
func (s *APIServer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.titles, s.UserAgents, s.MaxLags = 0, nil, nil, nil
}

func (s *APIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form
	titles := []string{}
	if t := q.Get("titles"); t != "" {
		titles = strings.Split(t, "|")
	}
	s.mu.Lock()
	s.requests++
	n := s.requests
	s.titles = append(s.titles, titles...)
	s.UserAgents = append(s.UserAgents, r.UserAgent())
	s.MaxLags = append(s.MaxLags, q.Get("maxlag"))
	fault, faulty := s.faults[n]
	hook := s.OnRequest
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	switch ua := r.UserAgent(); {
	case ua == "" || strings.HasPrefix(ua, "Go-http-client"):
		http.Error(w, "Please set a user-agent and respect our robot policy", http.StatusForbidden)
	case faulty:
		writeFault(w, fault)
	case q.Get("action") != "query" || q.Get("format") != "json" || q.Get("formatversion") != "2":
		writeJSON(w, map[string]any{"error": map[string]any{"code": "badparams", "info": "this fixture speaks action=query&format=json&formatversion=2 only"}})
	case len(titles) > 50:
		writeJSON(w, map[string]any{"error": map[string]any{"code": "toomanyvalues", "info": "Too many values supplied for parameter \"titles\". The limit is 50."}})
	default:
		writeJSON(w, s.query(q, titles))
	}
}

// writeFault answers with a scripted fault: an API error, or an HTTP status
// (with Retry-After if set).
func writeFault(w http.ResponseWriter, fault Fault) {
	if fault.RetryAfter != "" {
		w.Header().Set("Retry-After", fault.RetryAfter)
	}
	if fault.APIError != "" {
		w.Header().Set("MediaWiki-API-Error", fault.APIError)
		writeJSON(w, map[string]any{"error": map[string]any{"code": fault.APIError, "info": "scripted " + fault.APIError}})
		return
	}
	http.Error(w, http.StatusText(fault.Status), fault.Status)
}

// queryAnswer is one action=query response being built: the query's
// parts, the extracts given so far and the continuation.
type queryAnswer struct {
	q                     url.Values
	props                 map[string]bool
	normalized, redirects []map[string]any
	pages                 []map[string]any
	extracts, maxExtracts int
	exStart               int
	cont                  map[string]any
}

// query answers action=query for titles as MediaWiki does: titles
// normalised, redirects followed (redirects=1), then each page's info,
// page props, extracts (20 intros or 1 whole page per request, exlimit,
// excontinue) and links (LinkLimit per request, plcontinue).
func (s *APIServer) query(q url.Values, titles []string) map[string]any {
	a := &queryAnswer{q: q, props: map[string]bool{}, maxExtracts: 20, cont: map[string]any{}}
	for _, p := range strings.Split(q.Get("prop"), "|") {
		a.props[p] = true
	}
	if q.Get("exintro") == "" {
		a.maxExtracts = 1
	}
	if v, err := strconv.Atoi(q.Get("exlimit")); err == nil && v < a.maxExtracts {
		a.maxExtracts = v
	}
	a.exStart, _ = strconv.Atoi(q.Get("excontinue"))
	for i, t := range titles {
		norm := s.resolve(a, t)
		p, ok := s.pages[norm]
		if !ok {
			a.pages = append(a.pages, map[string]any{"ns": 0, "title": norm, "missing": true})
			continue
		}
		a.pages = append(a.pages, s.page(a, i, p))
	}
	query := map[string]any{"pages": a.pages}
	if a.normalized != nil {
		query["normalized"] = a.normalized
	}
	if a.redirects != nil {
		query["redirects"] = a.redirects
	}
	resp := map[string]any{"query": query}
	if len(a.cont) > 0 {
		resp["continue"] = a.cont
	} else {
		resp["batchcomplete"] = true
	}
	return resp
}

// resolve is the title t names: normalised, redirects followed when asked
// (at most 5 hops), each step recorded in the answer.
func (s *APIServer) resolve(a *queryAnswer, t string) string {
	norm := wiki.NormalizeTitle(t)
	if norm != t {
		a.normalized = append(a.normalized, map[string]any{"from": t, "to": norm})
	}
	if a.q.Get("redirects") == "" {
		return norm
	}
	for hops := 0; hops < 5; hops++ {
		p, ok := s.pages[norm]
		if !ok {
			break
		}
		target, isRedirect := wiki.RedirectTarget(p.Text)
		if !isRedirect {
			break
		}
		a.redirects = append(a.redirects, map[string]any{"from": norm, "to": target})
		norm = target
	}
	return norm
}

// page is the answer's entry for page p, the i-th title: the properties
// asked for, within the request's extract and link limits.
func (s *APIServer) page(a *queryAnswer, i int, p Page) map[string]any {
	page := map[string]any{"pageid": p.ID, "ns": 0, "title": p.Title}
	if a.props["info"] {
		page["lastrevid"] = p.Revision
	}
	if a.props["pageprops"] && wiki.IsDisambiguationWikitext(p.Text) {
		page["pageprops"] = map[string]any{"disambiguation": ""}
	}
	if a.props["extracts"] && i >= a.exStart {
		if a.extracts < a.maxExtracts {
			text := p.Text
			if a.q.Get("exintro") != "" {
				text = wiki.LeadSection(text)
			}
			page["extract"] = wiki.CleanWikitext(text)
			a.extracts++
		} else if _, set := a.cont["excontinue"]; !set {
			a.cont["excontinue"] = i
			a.cont["continue"] = "||"
		}
	}
	if a.props["links"] && !strings.HasPrefix(p.Text, "#") {
		limit := s.LinkLimit
		from, _ := strconv.Atoi(a.q.Get("plcontinue"))
		all := wiki.WikiLinks(p.Text)
		var links []map[string]any
		for j := from; j < len(all) && j < from+limit; j++ {
			links = append(links, map[string]any{"ns": 0, "title": all[j]})
		}
		if from+limit < len(all) {
			a.cont["plcontinue"] = strconv.Itoa(from + limit)
			a.cont["continue"] = "||"
		}
		page["links"] = links
	}
	return page
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}
