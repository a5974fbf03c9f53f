package wikitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
	if ua := r.UserAgent(); ua == "" || strings.HasPrefix(ua, "Go-http-client") {
		http.Error(w, "Please set a user-agent and respect our robot policy", http.StatusForbidden)
		return
	}
	if faulty {
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		if fault.APIError != "" {
			w.Header().Set("MediaWiki-API-Error", fault.APIError)
			writeJSON(w, map[string]any{"error": map[string]any{"code": fault.APIError, "info": "scripted " + fault.APIError}})
			return
		}
		http.Error(w, http.StatusText(fault.Status), fault.Status)
		return
	}
	if q.Get("action") != "query" || q.Get("format") != "json" || q.Get("formatversion") != "2" {
		writeJSON(w, map[string]any{"error": map[string]any{"code": "badparams", "info": "this fixture speaks action=query&format=json&formatversion=2 only"}})
		return
	}
	if len(titles) > 50 {
		writeJSON(w, map[string]any{"error": map[string]any{"code": "toomanyvalues", "info": "Too many values supplied for parameter \"titles\". The limit is 50."}})
		return
	}
	props := map[string]bool{}
	for _, p := range strings.Split(q.Get("prop"), "|") {
		props[p] = true
	}
	resp := map[string]any{"batchcomplete": true}
	query := map[string]any{}
	var normalized, redirects []map[string]any
	var pages []map[string]any
	extracts := 0
	maxExtracts := 20
	if q.Get("exintro") == "" {
		maxExtracts = 1
	}
	if v, err := strconv.Atoi(q.Get("exlimit")); err == nil && v < maxExtracts {
		maxExtracts = v
	}
	exStart, _ := strconv.Atoi(q.Get("excontinue"))
	cont := map[string]any{}
	for i, t := range titles {
		norm := wiki.NormalizeTitle(t)
		if norm != t {
			normalized = append(normalized, map[string]any{"from": t, "to": norm})
		}
		if q.Get("redirects") != "" {
			for hops := 0; hops < 5; hops++ {
				p, ok := s.pages[norm]
				if !ok {
					break
				}
				target, isRedirect := wiki.RedirectTarget(p.Text)
				if !isRedirect {
					break
				}
				redirects = append(redirects, map[string]any{"from": norm, "to": target})
				norm = target
			}
		}
		p, ok := s.pages[norm]
		if !ok {
			pages = append(pages, map[string]any{"ns": 0, "title": norm, "missing": true})
			continue
		}
		page := map[string]any{"pageid": p.ID, "ns": 0, "title": p.Title}
		if props["info"] {
			page["lastrevid"] = p.Revision
		}
		if props["pageprops"] && wiki.IsDisambiguationWikitext(p.Text) {
			page["pageprops"] = map[string]any{"disambiguation": ""}
		}
		if props["extracts"] && i >= exStart {
			if extracts < maxExtracts {
				text := p.Text
				if q.Get("exintro") != "" {
					text = wiki.LeadSection(text)
				}
				page["extract"] = wiki.CleanWikitext(text)
				extracts++
			} else if _, set := cont["excontinue"]; !set {
				cont["excontinue"] = i
				cont["continue"] = "||"
			}
		}
		if props["links"] && !strings.HasPrefix(p.Text, "#") {
			limit := s.LinkLimit
			from, _ := strconv.Atoi(q.Get("plcontinue"))
			all := wiki.WikiLinks(p.Text)
			var links []map[string]any
			for j := from; j < len(all) && j < from+limit; j++ {
				links = append(links, map[string]any{"ns": 0, "title": all[j]})
			}
			if from+limit < len(all) {
				cont["plcontinue"] = strconv.Itoa(from + limit)
				cont["continue"] = "||"
			}
			page["links"] = links
		}
		pages = append(pages, page)
	}
	if normalized != nil {
		query["normalized"] = normalized
	}
	if redirects != nil {
		query["redirects"] = redirects
	}
	query["pages"] = pages
	resp["query"] = query
	if len(cont) > 0 {
		resp["continue"] = cont
		delete(resp, "batchcomplete")
	}
	writeJSON(w, resp)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}
