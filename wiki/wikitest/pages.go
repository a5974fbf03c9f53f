// Package wikitest provides Wikipedia fixtures for tests: a page file
// format, a multistream dump writer and a local MediaWiki API server. It
// never touches the network.
package wikitest

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/lcl-project/lcl/wiki"
)

// Page is one fixture page: its title and wikitext. A page whose text is
// "#REDIRECT [[Target]]" is a redirect; one carrying {{disambiguation}} is a
// disambiguation page.
type Page struct {
	Title    string
	Text     string
	ID       int // page id, 1-based in file order
	Revision int // revision id, 1000 + ID
}

// ReadPages reads a page file: each page starts with a line "@@ Title" and
// its wikitext follows up to the next "@@ " line. Lines before the first page
// that start with # are comments.
func ReadPages(path string) ([]Page, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pages []Page
	var cur *Page
	var body []string
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(strings.Join(body, "\n"))
			pages = append(pages, *cur)
		}
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if title, ok := strings.CutPrefix(text, "@@ "); ok {
			flush()
			title = wiki.NormalizeTitle(title)
			if prev, dup := seen[title]; dup {
				return nil, fmt.Errorf("%s:%d: page %q already defined on line %d", path, line, title, prev)
			}
			seen[title] = line
			cur, body = &Page{Title: title, ID: len(pages) + 1, Revision: 1001 + len(pages)}, nil
			continue
		}
		if cur == nil {
			if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
				continue
			}
			return nil, fmt.Errorf("%s:%d: expected \"@@ Title\" before page text", path, line)
		}
		body = append(body, text)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return pages, nil
}

// NewPages numbers pages given as title, wikitext pairs.
func NewPages(titleText ...string) []Page {
	var out []Page
	for i := 0; i+1 < len(titleText); i += 2 {
		out = append(out, Page{Title: wiki.NormalizeTitle(titleText[i]), Text: titleText[i+1], ID: len(out) + 1, Revision: 1001 + len(out)})
	}
	return out
}
