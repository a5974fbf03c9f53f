package wikitest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsnet/compress/bzip2"

	"github.com/lcl-project/lcl/wiki"
)

// DumpOptions shape a generated dump.
type DumpOptions struct {
	PagesPerStream int      // default 3
	Truncate       []string // titles written alone in a stream cut in half
	Malformed      []string // titles written alone in a stream as broken XML
}

// Stream is one bz2 stream of a generated dump.
type Stream struct {
	Offset, Length int64
	Titles         []string
}

// DumpFiles describes a generated dump.
type DumpFiles struct {
	Path, IndexPath string
	Size            int64
	Streams         []Stream // page streams (not the siteinfo header or the footer)
}

// StreamOf returns the stream holding title.
func (d *DumpFiles) StreamOf(title string) (Stream, bool) {
	for _, s := range d.Streams {
		for _, t := range s.Titles {
			if t == title {
				return s, true
			}
		}
	}
	return Stream{}, false
}

// WriteDump writes pages as a multistream dump into dir, named like
// Wikimedia's: test-pages-articles-multistream.xml.bz2 and
// test-pages-articles-multistream-index.txt.bz2 (the index in two bz2
// streams, as the real one is in many). It uses a pure-Go bzip2 writer.
func WriteDump(dir string, pages []Page, opts DumpOptions) (*DumpFiles, error) {
	if opts.PagesPerStream <= 0 {
		opts.PagesPerStream = 3
	}
	special := map[string]string{}
	for _, t := range opts.Truncate {
		special[wiki.NormalizeTitle(t)] = "truncate"
	}
	for _, t := range opts.Malformed {
		special[wiki.NormalizeTitle(t)] = "malformed"
	}
	var groups [][]Page
	var cur []Page
	for _, p := range pages {
		if special[p.Title] != "" {
			groups = append(groups, []Page{p})
			continue
		}
		cur = append(cur, p)
		if len(cur) == opts.PagesPerStream {
			groups, cur = append(groups, cur), nil
		}
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	var file, index bytes.Buffer
	if err := writeStream(&file, []byte(`<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>testwiki</dbname>
  </siteinfo>
`)); err != nil {
		return nil, err
	}
	out := &DumpFiles{}
	for _, g := range groups {
		var x bytes.Buffer
		st := Stream{Offset: int64(file.Len())}
		for _, p := range g {
			writePageXML(&x, p, special[p.Title] == "malformed")
			st.Titles = append(st.Titles, p.Title)
			fmt.Fprintf(&index, "%d:%d:%s\n", st.Offset, p.ID, p.Title)
		}
		var z bytes.Buffer
		if err := writeStream(&z, x.Bytes()); err != nil {
			return nil, err
		}
		b := z.Bytes()
		if special[g[0].Title] == "truncate" {
			b = b[:len(b)/2]
		}
		file.Write(b)
		st.Length = int64(len(b))
		out.Streams = append(out.Streams, st)
	}
	if err := writeStream(&file, []byte("</mediawiki>\n")); err != nil {
		return nil, err
	}
	out.Path = filepath.Join(dir, "test-pages-articles-multistream.xml.bz2")
	out.IndexPath = wiki.IndexPath(out.Path)
	out.Size = int64(file.Len())
	if err := os.WriteFile(out.Path, file.Bytes(), 0o644); err != nil {
		return nil, err
	}
	lines := index.Bytes()
	half := bytes.IndexByte(lines[len(lines)/2:], '\n') + len(lines)/2 + 1
	var ix bytes.Buffer
	if err := writeStream(&ix, lines[:half]); err != nil {
		return nil, err
	}
	if err := writeStream(&ix, lines[half:]); err != nil {
		return nil, err
	}
	if err := os.WriteFile(out.IndexPath, ix.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

func writeStream(w *bytes.Buffer, data []byte) error {
	z, err := bzip2.NewWriter(w, &bzip2.WriterConfig{Level: 9})
	if err != nil {
		return err
	}
	if _, err := z.Write(data); err != nil {
		return err
	}
	return z.Close()
}

func writePageXML(w *bytes.Buffer, p Page, malformed bool) {
	esc := func(s string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	fmt.Fprintf(w, "  <page>\n    <title>%s</title>\n    <ns>0</ns>\n    <id>%d</id>\n", esc(p.Title), p.ID)
	if target, ok := wiki.RedirectTarget(p.Text); ok {
		fmt.Fprintf(w, "    <redirect title=\"%s\" />\n", esc(target))
	}
	fmt.Fprintf(w, "    <revision>\n      <id>%d</id>\n      <model>wikitext</model>\n      <format>text/x-wiki</format>\n", p.Revision)
	if malformed {
		// An unescaped '<' and a never-closed <text>: what a damaged page looks like.
		fmt.Fprintf(w, "      <text xml:space=\"preserve\">%s <b & broken\n    </revision>\n  </page>\n", p.Text)
		return
	}
	fmt.Fprintf(w, "      <text bytes=\"%d\" xml:space=\"preserve\">%s</text>\n    </revision>\n  </page>\n", len(p.Text), esc(p.Text))
}
