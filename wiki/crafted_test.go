package wiki_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsnet/compress/bzip2"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
	"github.com/lcl-project/lcl/wiki"
)

func bz2(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := bzip2.NewWriter(&out, &bzip2.WriterConfig{Level: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The audit's multistream bomb: a stream of a few kilobytes that expands
// without end. Decompression stops at the stream's limit (1 MiB plus 100
// times its compressed size) and the page's error says so, naming the
// title and the stream.
func TestDumpStreamBomb(t *testing.T) {
	xml := append([]byte("<page><title>Bomb</title><ns>0</ns><id>1</id><revision><id>2</id><text>"),
		bytes.Repeat([]byte("a"), 32<<20)...)
	stream := bz2(t, xml)
	if len(stream) > 64<<10 {
		t.Fatalf("the bomb compresses to %d bytes", len(stream))
	}
	d, err := wiki.NewDump(bytes.NewReader(stream), int64(len(stream)), strings.NewReader("0:1:Bomb\n"), "bomb.xml.bz2")
	if err != nil {
		t.Fatal(err)
	}
	var pages []wiki.Page
	boundedtest.MaxAlloc(t, 64<<20, "looking up a page in a 32 MiB bzip2 bomb", func() {
		pages, err = d.Pages(context.Background(), []string{"Bomb"}, false)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`dump bomb.xml.bz2: page "Bomb": stream at byte offset 0: the page after 0 good ones: the %d-byte stream decompressed is larger than`, len(stream))
	if pages[0].Err == nil || !strings.HasPrefix(pages[0].Err.Error(), want) || !strings.HasSuffix(pages[0].Err.Error(), "(the limit)") {
		t.Fatalf("err = %v, want %q…", pages[0].Err, want)
	}
}

// An index (itself compressed, so cheap to make huge) that lists more pages
// in one stream than any dump holds is refused at the line that does so.
func TestDumpIndexTooManyPagesPerStream(t *testing.T) {
	var idx strings.Builder
	for i := range wiki.MaxPagesPerStream + 1 {
		fmt.Fprintf(&idx, "0:%d:T%d\n", i, i)
	}
	_, err := wiki.NewDump(strings.NewReader("abc"), 3, bytes.NewReader(bz2(t, []byte(idx.String()))), "d.xml.bz2")
	want := fmt.Sprintf("dump: index of d.xml.bz2: line %d: more than %d pages in the stream at byte offset 0", wiki.MaxPagesPerStream+1, wiki.MaxPagesPerStream)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
	_, err = wiki.NewDump(strings.NewReader("abc"), 3, strings.NewReader("0:1:"+strings.Repeat("x", 2<<20)), "d.xml.bz2")
	if err == nil || err.Error() != "dump: index of d.xml.bz2: line 1: longer than 1 MiB (the limit): input too large" {
		t.Fatalf("long line: %v", err)
	}
}

// FuzzDumpIndex: no index panics the reader.
func FuzzDumpIndex(f *testing.F) {
	f.Add([]byte("0:1:A\n2:2:B\n"), int64(10))
	f.Add([]byte("12:3\n"), int64(3))
	f.Add([]byte("BZh9"), int64(3))
	f.Fuzz(func(t *testing.T, idx []byte, size int64) {
		d, err := wiki.NewDump(bytes.NewReader(make([]byte, 16)), size, bytes.NewReader(idx), "d")
		if err == nil && d.Len() == 0 {
			t.Fatal("an index with no pages accepted")
		}
	})
}

// FuzzDumpStream: no stream (bzip2 or its XML) panics or hangs a lookup.
func FuzzDumpStream(f *testing.F) {
	f.Add([]byte("<page><title>A</title><revision><text>x</text></revision></page>"))
	f.Add([]byte("<page><title>A</title><revision><text>[[x|[[y]]</text></revision></page><page><title>B</title><redirect title=\"A\"/></page>"))
	f.Add([]byte("<page><title></title></page>"))
	f.Add([]byte("BZh91AY&SY"))
	f.Fuzz(func(t *testing.T, in []byte) {
		stream := in
		if !bytes.HasPrefix(in, []byte("BZh")) {
			var out bytes.Buffer
			w, _ := bzip2.NewWriter(&out, nil)
			w.Write(in)
			w.Close()
			stream = out.Bytes()
		}
		d, err := wiki.NewDump(bytes.NewReader(stream), int64(len(stream)), strings.NewReader("0:1:A\n0:2:B\n"), "d")
		if err != nil {
			t.Fatal(err)
		}
		d.Pages(context.Background(), []string{"A", "B"}, false)
		d.Links(context.Background(), "A")
	})
}

// FuzzParseOverrides: no override file panics the parser.
func FuzzParseOverrides(f *testing.F) {
	f.Add("n02119789\tKit fox\n# x\n\nn01\tA\tB\n")
	f.Add("n1\t\t\n")
	f.Fuzz(func(t *testing.T, in string) {
		o, err := wiki.ParseOverrides(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for k, ts := range o {
			if k == "" || len(ts) == 0 {
				t.Fatalf("override %q: %q", k, ts)
			}
		}
	})
}
