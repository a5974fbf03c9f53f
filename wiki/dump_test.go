package wiki_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wiki/wikitest"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func dumpFixture(t *testing.T) (*wikitest.DumpFiles, *wiki.Dump, *countingReaderAt) {
	t.Helper()
	pages := apiFixturePages()
	extra := []string{
		"Truncated page", "This page's stream is cut in half.",
		"Malformed page", "This page's XML is broken.",
		"Formatted", "'''Bold''' [[Link target|label]]{{Infobox|a={{b}}}}<ref>note</ref> [[File:X.jpg|thumb|cap [[y]]]] text.\n{|\n| cell\n|}\n[[Category:Things]]\n<!-- hidden -->\n== Section ==\nLater ''italic''.",
	}
	for i := 0; i < 40; i++ {
		// Made-up filler text that does not compress to nothing, so streams have real size.
		extra = append(extra, fmt.Sprintf("Filler %d", i), strings.Repeat(fmt.Sprintf("Filler article %d talks about topic %d and %d. ", i, i*7919%1000, i*104729%977), 30))
	}
	pages = append(pages, wikitest.NewPages(extra...)...)
	for i := range pages {
		pages[i].ID, pages[i].Revision = i+1, 1001+i
	}
	files, err := wikitest.WriteDump(t.TempDir(), pages, wikitest.DumpOptions{PagesPerStream: 4, Truncate: []string{"Truncated page"}, Malformed: []string{"Malformed page"}})
	if err != nil {
		t.Fatalf("writing the dump fixture: %v", err)
	}
	f, err := os.Open(files.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ix, err := os.Open(files.IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	cr := &countingReaderAt{r: f}
	d, err := wiki.NewDump(cr, files.Size, ix, files.Path)
	if err != nil {
		t.Fatal(err)
	}
	return files, d, cr
}

func TestDumpReadsOnlyTheNeededStream(t *testing.T) {
	files, d, cr := dumpFixture(t)
	if d.Len() != 49 {
		t.Fatalf("index lists %d pages, want 49", d.Len())
	}
	st, _ := files.StreamOf("Filler 17")
	pages, err := d.Pages(context.Background(), []string{"Filler 17"}, true)
	if err != nil || pages[0].Err != nil || !strings.HasPrefix(pages[0].Text, "Filler article 17 talks") {
		t.Fatalf("Pages(Filler 17) = %+v, %v", pages, err)
	}
	if got := cr.n.Load(); got == 0 || got > st.Length {
		t.Errorf("looking up one page read %d bytes; want at most its stream's %d (the dump is %d bytes)", got, st.Length, files.Size)
	}
	if 4*st.Length > files.Size {
		t.Fatalf("fixture too small to tell a stream from a scan: stream %d of %d bytes", st.Length, files.Size)
	}
	// A second page of the same stream comes from the cache.
	before := cr.n.Load()
	if _, err := d.Pages(context.Background(), []string{st.Titles[0]}, false); err != nil {
		t.Fatal(err)
	}
	if cr.n.Load() != before {
		t.Errorf("a page of a cached stream read %d more bytes", cr.n.Load()-before)
	}
}

func TestDumpPages(t *testing.T) {
	files, d, _ := dumpFixture(t)
	pages, err := d.Pages(context.Background(), []string{"Mouse (rodent)", "crane", "No such page", "Truncated page", "Crane (bird)", "Malformed page", "Formatted"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if p := pages[0]; p.Title != "Mouse" || p.Text != "A mouse is a small rodent." || p.Revision != "1006" {
		t.Errorf("redirect: %+v, want Mouse with its text and revision", p)
	}
	if p := pages[1]; p.Title != "Crane" || !p.Disambiguation {
		t.Errorf("disambiguation: %+v", p)
	}
	if p := pages[2]; !p.Missing || p.Err != nil {
		t.Errorf("missing: %+v", p)
	}
	for _, i := range []int{3, 5} {
		p := pages[i]
		st, _ := files.StreamOf(p.Requested)
		if p.Err == nil || !strings.Contains(p.Err.Error(), fmt.Sprintf("%q", p.Requested)) || !strings.Contains(p.Err.Error(), fmt.Sprintf("byte offset %d", st.Offset)) {
			t.Errorf("%s: err = %v, want one naming the title and byte offset %d", p.Requested, p.Err, st.Offset)
		}
	}
	if p := pages[4]; p.Err != nil || p.Text != "Cranes are large, long-legged and long-necked birds." {
		t.Errorf("a good page next to corrupt ones: %+v", p)
	}
	if p := pages[6]; p.Text != "Bold label text." {
		t.Errorf("lead of Formatted = %q, want the cleaned lead section", p.Text)
	}
	full, _ := d.Pages(context.Background(), []string{"Formatted"}, true)
	if want := "Bold label text.\n\nSection\nLater italic."; full[0].Text != want {
		t.Errorf("full Formatted = %q, want %q", full[0].Text, want)
	}
	links, err := d.Links(context.Background(), "Crane")
	if want := []string{"Crane (bird)", "Crane (machine)", "Crane (surname)", "Ichabod Crane", "Crane fly"}; err != nil || !reflect.DeepEqual(links, want) {
		t.Errorf("Links(Crane) = %q, %v; want %q", links, err, want)
	}
}

func TestOpenDumpFindsIndexAndNamesMissingOne(t *testing.T) {
	files, _, _ := dumpFixture(t)
	d, err := wiki.OpenDump(files.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if p, _ := d.Pages(context.Background(), []string{"Crane (machine)"}, false); p[0].Title != "Crane (machine)" {
		t.Errorf("OpenDump lookup = %+v", p[0])
	}
	os.Remove(files.IndexPath)
	if _, err := wiki.OpenDump(files.Path); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("OpenDump without index: err = %v", err)
	}
}

func TestNewDumpRejectsBadIndex(t *testing.T) {
	for _, idx := range []string{"12:3\n", "x:1:T\n", "999999:1:T\n", ""} {
		_, err := wiki.NewDump(strings.NewReader("abc"), 3, strings.NewReader(idx), "d.xml.bz2")
		if err == nil {
			t.Errorf("index %q accepted", idx)
		}
	}
}
