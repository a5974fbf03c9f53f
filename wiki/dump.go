package wiki

import (
	"bufio"
	"compress/bzip2"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lcl-project/lcl/internal/bounded"
)

// Dump is the PageSource over an offline Wikipedia dump in the multistream
// format: pages-articles-multistream.xml.bz2 is a series of independent bz2
// streams of (usually 100) <page> elements, and its -index.txt.bz2 lists
// "offset:pageid:title" per page, offset being the byte offset of the page's
// stream. A lookup decompresses only that one stream (a few recently read
// streams are cached), so the dump is never scanned. The index is held in
// memory as 64-bit title hashes with offsets (16 bytes a page, about 400 MB
// for English Wikipedia's 24 million pages). Safe for concurrent use.
type Dump struct {
	name    string
	r       io.ReaderAt
	size    int64
	closer  io.Closer
	entries []dumpEntry // sorted by hash
	offsets []int64     // distinct stream offsets, ascending

	mu    sync.Mutex
	cache map[int64]*dumpStream
	lru   []int64
}

type dumpEntry struct {
	hash   uint64
	offset int64
}

type dumpStream struct {
	pages map[string]*dumpPage
	err   error // decompression or XML error; pages holds what was read before it
}

type dumpPage struct {
	Title    string `xml:"title"`
	NS       int    `xml:"ns"`
	ID       int64  `xml:"id"`
	Redirect *struct {
		Title string `xml:"title,attr"`
	} `xml:"redirect"`
	Revision struct {
		ID   int64  `xml:"id"`
		Text string `xml:"text"`
	} `xml:"revision"`
}

const dumpCacheStreams = 8

// IndexPath is the index file that goes with a multistream dump:
// "X-pages-articles-multistream.xml.bz2" → "X-pages-articles-multistream-index.txt.bz2".
func IndexPath(dumpPath string) string {
	return strings.TrimSuffix(strings.TrimSuffix(dumpPath, ".bz2"), ".xml") + "-index.txt.bz2"
}

// OpenDump opens a multistream dump and reads its index (IndexPath).
func OpenDump(path string) (*Dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dump: %w", err)
	}
	ipath := IndexPath(path)
	ix, err := os.Open(ipath)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dump: index of %s: %w (expected next to the dump, as Wikimedia publishes it)", path, err)
	}
	defer ix.Close()
	d, err := NewDump(f, st.Size(), ix, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	d.closer = f
	return d, nil
}

// NewDump reads a multistream dump from r (size bytes) with its index, which
// may be bz2-compressed (as published) or plain text. name is used in errors.
func NewDump(r io.ReaderAt, size int64, index io.Reader, name string) (*Dump, error) {
	d := &Dump{name: name, r: r, size: size, cache: map[int64]*dumpStream{}}
	br := bufio.NewReaderSize(index, 1<<16)
	var src io.Reader = br
	if magic, err := br.Peek(3); err == nil && string(magic) == "BZh" {
		src = bzip2.NewReader(br)
	}
	sc := bounded.NewScanner(src, 1<<20)
	perStream := map[int64]int{}
	for sc.Scan() {
		line, text := sc.Line(), sc.Text()
		if text == "" {
			continue
		}
		off, rest, ok1 := strings.Cut(text, ":")
		_, title, ok2 := strings.Cut(rest, ":")
		o, err := strconv.ParseInt(off, 10, 64)
		if !ok1 || !ok2 || err != nil || o < 0 || o >= size || title == "" {
			return nil, fmt.Errorf("dump: index of %s: line %d: expected offset:pageid:title with an offset inside the %d-byte dump, got %q", name, line, size, trunc(text, 80))
		}
		// Wikimedia's streams hold 100 pages each; the cap keeps a
		// compressed index from listing more pages than the dump can hold.
		if perStream[o]++; perStream[o] > MaxPagesPerStream {
			return nil, fmt.Errorf("dump: index of %s: line %d: more than %d pages in the stream at byte offset %d (Wikimedia's dumps have 100)", name, line, MaxPagesPerStream, o)
		}
		d.entries = append(d.entries, dumpEntry{titleHash(title), o})
		if perStream[o] == 1 {
			d.offsets = append(d.offsets, o)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dump: index of %s: %w", name, err)
	}
	if len(d.entries) == 0 {
		return nil, fmt.Errorf("dump: index of %s lists no pages", name)
	}
	sort.Slice(d.entries, func(i, j int) bool { return d.entries[i].hash < d.entries[j].hash })
	sort.Slice(d.offsets, func(i, j int) bool { return d.offsets[i] < d.offsets[j] })
	return d, nil
}

func titleHash(t string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(t))
	return h.Sum64()
}

// Close closes the dump file opened by OpenDump.
func (d *Dump) Close() error {
	if d.closer != nil {
		return d.closer.Close()
	}
	return nil
}

// Name is "dump".
func (d *Dump) Name() string { return "dump" }

// Len is the number of pages in the index.
func (d *Dump) Len() int { return len(d.entries) }

// page finds a page by exact title; nil, nil when the index lacks it.
func (d *Dump) page(title string) (*dumpPage, error) {
	h := titleHash(title)
	i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].hash >= h })
	var firstErr error
	for ; i < len(d.entries) && d.entries[i].hash == h; i++ {
		off := d.entries[i].offset
		s := d.stream(off)
		if p, ok := s.pages[title]; ok {
			return p, nil
		}
		if s.err != nil && firstErr == nil {
			firstErr = fmt.Errorf("dump %s: page %q: stream at byte offset %d: %w", d.name, title, off, s.err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, nil
}

// stream decompresses and parses the stream at off (cached).
func (d *Dump) stream(off int64) *dumpStream {
	d.mu.Lock()
	if s, ok := d.cache[off]; ok {
		d.mu.Unlock()
		return s
	}
	d.mu.Unlock()
	end := d.size
	if i := sort.Search(len(d.offsets), func(i int) bool { return d.offsets[i] > off }); i < len(d.offsets) {
		end = d.offsets[i]
	}
	s := &dumpStream{pages: map[string]*dumpPage{}}
	// Decompress while parsing, capped: a stream may expand to at most
	// streamLimit of its compressed size (a bzip2 bomb of a few kilobytes
	// stops there), and one page to MaxPageBytes.
	limit := streamLimit(end - off)
	zr := bounded.NewReader(bzip2.NewReader(io.NewSectionReader(d.r, off, end-off)), limit,
		fmt.Sprintf("the %d-byte stream decompressed", end-off))
	s.err = parsePages(zr, s.pages)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.cache[off]; !ok {
		d.cache[off] = s
		d.lru = append(d.lru, off)
		if len(d.lru) > dumpCacheStreams {
			delete(d.cache, d.lru[0])
			d.lru = d.lru[1:]
		}
	}
	return s
}

// Limits of the dump reader.
const (
	// MaxPagesPerStream bounds the pages the index may list in one stream.
	MaxPagesPerStream = 10000
	// MaxPageBytes bounds one <page> element as stored in the dump (XML,
	// entities escaped): MediaWiki's own limit is 2 MiB of wikitext.
	MaxPageBytes = 16 << 20
	// MaxWikitextBytes bounds the wikitext of one page that is cleaned
	// (twice MediaWiki's $wgMaxArticleSize of 2 MiB).
	MaxWikitextBytes = 4 << 20
	// MaxStreamBytes bounds one decompressed stream; a stream may also
	// expand to at most 100 times its compressed size plus 1 MiB (English
	// Wikipedia's expand about 4 times).
	MaxStreamBytes = 256 << 20
	maxStreamRatio = 100
)

// streamLimit is how far a stream of compressed bytes may expand.
func streamLimit(compressed int64) int64 {
	if compressed > (MaxStreamBytes-1<<20)/maxStreamRatio {
		return MaxStreamBytes
	}
	return 1<<20 + maxStreamRatio*compressed
}

// parsePages reads the <page> elements of one stream into pages, keeping
// those read before any error. The stream is decoded as it is read; a page
// longer than MaxPageBytes is an error.
func parsePages(r io.Reader, pages map[string]*dumpPage) error {
	cr := &countReader{r: r, budget: -1}
	dec := xml.NewDecoder(cr)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return streamErr(err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "page" {
			continue
		}
		cr.budget = MaxPageBytes
		var p dumpPage
		if err := dec.DecodeElement(&p, &se); err != nil {
			return fmt.Errorf("the page after %d good ones: %w", len(pages), streamErr(err))
		}
		cr.budget = -1
		if p.Title == "" {
			return fmt.Errorf("a <page> without <title> after %d good ones", len(pages))
		}
		pages[p.Title] = &p
	}
}

// streamErr says whether a stream failed in bzip2, in its XML or at a limit.
func streamErr(err error) error {
	var le *bounded.LimitError
	var se *xml.SyntaxError
	switch {
	case errors.As(err, &le):
		return err
	case errors.As(err, &se):
		return fmt.Errorf("XML: %w", err)
	default:
		return fmt.Errorf("bz2: %w", err)
	}
}

// countReader fails once more than budget bytes are read (budget < 0: no
// limit); parsePages sets it for each page.
type countReader struct {
	r      io.Reader
	budget int64
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.budget == 0 {
		return 0, &bounded.LimitError{What: "one <page>", Limit: MaxPageBytes}
	}
	if c.budget > 0 && int64(len(p)) > c.budget {
		p = p[:c.budget]
	}
	n, err := c.r.Read(p)
	if c.budget > 0 {
		c.budget -= int64(n)
	}
	return n, err
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// lookup follows redirects (up to 5 hops) from title.
func (d *Dump) lookup(title string) (*dumpPage, error) {
	t := NormalizeTitle(title)
	for hops := 0; hops <= 5; hops++ {
		p, err := d.page(t)
		if err != nil || p == nil {
			return nil, err
		}
		target := ""
		if p.Redirect != nil {
			target = NormalizeTitle(p.Redirect.Title)
		} else if rt, ok := RedirectTarget(p.Revision.Text); ok {
			target = rt
		}
		if target == "" {
			return p, nil
		}
		if i := strings.IndexByte(target, '#'); i >= 0 {
			target = strings.TrimSpace(target[:i])
		}
		t = target
	}
	return nil, fmt.Errorf("dump %s: %q: more than 5 redirects", d.name, title)
}

// Pages implements PageSource: redirects followed, wikitext cleaned to plain
// text (the lead section unless full).
func (d *Dump) Pages(ctx context.Context, titles []string, full bool) ([]Page, error) {
	out := make([]Page, len(titles))
	for i, t := range titles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i].Requested = NormalizeTitle(t)
		p, err := d.lookup(t)
		switch {
		case err != nil:
			out[i].Err = err
		case p == nil:
			out[i].Missing = true
		case len(p.Revision.Text) > MaxWikitextBytes:
			out[i].Err = fmt.Errorf("dump %s: page %q: %s of wikitext, more than the %s limit", d.name, p.Title, bounded.Bytes(int64(len(p.Revision.Text))), bounded.Bytes(MaxWikitextBytes))
		default:
			out[i].Title = p.Title
			out[i].Disambiguation = IsDisambiguationWikitext(p.Revision.Text)
			text := p.Revision.Text
			if !full {
				text = LeadSection(text)
			}
			out[i].Text = CleanWikitext(text)
			if p.Revision.ID != 0 {
				out[i].Revision = strconv.FormatInt(p.Revision.ID, 10)
			}
		}
	}
	return out, nil
}

// Links implements PageSource from the page's wikitext.
func (d *Dump) Links(ctx context.Context, title string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.lookup(title)
	if err != nil || p == nil {
		return nil, err
	}
	if len(p.Revision.Text) > MaxWikitextBytes {
		return nil, fmt.Errorf("dump %s: page %q: %s of wikitext, more than the %s limit", d.name, p.Title, bounded.Bytes(int64(len(p.Revision.Text))), bounded.Bytes(MaxWikitextBytes))
	}
	return WikiLinks(p.Revision.Text), nil
}
