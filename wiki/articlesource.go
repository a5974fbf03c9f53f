package wiki

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/lcl-project/lcl/wordnet"
)

// ArticleSource is the Source over Wikipedia (the API or a dump): it
// resolves each class with Resolve, then fetches the chosen articles' full
// text. Several override titles give one document: their texts joined by a
// blank line, titles and revisions joined by " | ".
type ArticleSource struct {
	Pages   PageSource
	WordNet *wordnet.DB
	Options ResolveOptions
}

// Name is the page source's name.
func (a *ArticleSource) Name() string { return a.Pages.Name() }

// Document resolves and fetches one class's document.
func (a *ArticleSource) Document(ctx context.Context, req Request) (*Document, error) {
	d, err := Resolve(ctx, a.Pages, a.WordNet, req, a.Options)
	if err != nil {
		return nil, err
	}
	return a.fetch(ctx, req, d)
}

func (a *ArticleSource) fetch(ctx context.Context, req Request, d *Decision) (*Document, error) {
	doc := &Document{WNID: d.WNID, Decision: d}
	if len(d.Titles) == 0 {
		if req.Synset == nil {
			return nil, fmt.Errorf("no article for %q and no WordNet synset to fall back on", req.Name)
		}
		doc.Text, doc.Source = WordNetDocument(a.WordNet, req.Synset), "wordnet"
		return doc, nil
	}
	pages, err := a.Pages.Pages(ctx, d.Titles, true)
	if err != nil {
		return nil, err
	}
	var texts, revs []string
	for _, p := range pages {
		if p.Err != nil {
			return nil, p.Err
		}
		if p.Missing || p.Disambiguation {
			return nil, fmt.Errorf("article %q vanished or became a disambiguation page between resolution and fetch", p.Requested)
		}
		texts = append(texts, p.Text)
		revs = append(revs, p.Revision)
	}
	doc.Title = joinTitles(d.Titles)
	doc.Text = strings.Join(texts, "\n\n")
	doc.Source = a.Pages.Name()
	if strings.Join(revs, "") != "" {
		doc.Revision = joinTitles(revs)
	}
	return doc, nil
}

// Close closes the page source when it holds files (a dump).
func (a *ArticleSource) Close() error {
	if c, ok := a.Pages.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
