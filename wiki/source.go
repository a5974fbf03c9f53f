package wiki

import (
	"context"
	"strings"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wordnet"
)

// Page is what a PageSource knows about one requested title.
type Page struct {
	Requested      string // the title asked for, normalised
	Title          string // the title after redirects; "" when missing
	Missing        bool
	Disambiguation bool
	Text           string // plain text: the lead section, or the whole article when asked for
	Revision       string // revision id, when the source knows it
	Err            error  // this title could not be read (a corrupt dump stream); other titles may still be fine
}

// PageSource looks Wikipedia pages up by title: the MediaWiki API (APIClient)
// or an offline dump (Dump).
type PageSource interface {
	// Name is the source's name as stored with documents ("api", "dump").
	Name() string
	// Pages answers titles[i] in result i, redirects followed. With full
	// false the text may be only the lead section (enough to score a
	// candidate); with full true it is the whole article as plain text.
	// An error means the request as a whole failed.
	Pages(ctx context.Context, titles []string, full bool) ([]Page, error)
	// Links returns the article titles a page links to, in page order; the
	// resolver reads disambiguation pages with it.
	Links(ctx context.Context, title string) ([]string, error)
}

// Document is the text stored for one class.
type Document struct {
	WNID     string
	Title    string // article title(s), " | "-joined; "" for a WordNet document
	Text     string
	Source   string // the source that produced Text: api, dump, wordnet, dir
	Revision string // revision id(s), " | "-joined like Title
	Decision *Decision
}

// Reason is the stored reason string: "kind" or "kind: detail".
func (d *Document) Reason() string { return d.Decision.String() }

// Fallback reports whether the class got a stand-in (its hypernym's article
// or its WordNet document) instead of its own article.
func (d *Document) Fallback() bool { return d.Decision.Reason == ReasonFallback }

// Request names one class to fetch a document for.
type Request struct {
	ClassID string
	Name    string          // the class name, used for title candidates when Synset is nil
	Synset  *wordnet.Synset // nil for classes without a WordNet synset
}

func (r Request) wnid() string {
	if r.Synset != nil {
		return r.Synset.ID
	}
	return ""
}

// Source gives the document of a class: an ArticleSource over the API or a
// dump, WordNetSource, or DirSource; OpenSource opens one by name.
type Source interface {
	// Name is stored with every document the source gives ("api", "dump",
	// "wordnet", "dir").
	Name() string
	Document(ctx context.Context, req Request) (*Document, error)
	// Close releases what the source holds open (a dump's file).
	Close() error
}

// RequestFor is the request for a class of a label set: its synset when it
// names one (the label set is checked against WordNet when loaded).
func RequestFor(wn *wordnet.DB, c labels.Class) Request {
	req := Request{ClassID: c.ID, Name: c.Name}
	if c.WNID != "" && wn != nil {
		req.Synset, _ = wn.Synset(c.WNID)
	}
	return req
}

// joinTitles joins several titles (override with several articles) the way
// they are stored: "A | B".
func joinTitles(ts []string) string { return strings.Join(ts, " | ") }
