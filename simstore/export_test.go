package simstore

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
)

func TestExportFormats(t *testing.T) {
	for _, c := range []struct {
		kind, def string
		formats   []string
	}{
		{KindMatrix, FormatCSV, []string{"csv", "npy", "json"}},
		{KindVectors, FormatCSV, []string{"csv", "npy", "json"}},
		{KindArticle, FormatText, []string{"json", "text"}},
		{KindRun, FormatJSON, []string{"json"}},
		{"other", "", nil},
	} {
		if got := ExportFormatsOf(c.kind); !slices.Equal(got, c.formats) || DefaultExportFormat(c.kind) != c.def {
			t.Errorf("%s: formats %v, default %q; want %v, %q", c.kind, got, DefaultExportFormat(c.kind), c.formats, c.def)
		}
	}
	for path, want := range map[string]string{"a.csv": "csv", "dir/B.NPY": "npy", "x.json": "json", "notes.txt": "text", "m.bin": "", "csv": ""} {
		if got := ExportFormatOfPath(path); got != want {
			t.Errorf("ExportFormatOfPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestExport(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	m := &Matrix{LabelSet: "toy", Kind: "visual", Classes: []string{"n01", `a,"b"`}, Data: []float32{1, 0.1, 0.1, nan}}
	v := &Vectors{LabelSet: "toy", Model: "d2v", IDs: []string{"n01", "n02"}, Dim: 3, Data: []float32{1.5, -2, 1e-30, 0, 3, inf}}
	a := &Article{LabelSet: "toy", ClassID: "n01", Title: "Tench", Text: "The tench is a fish.\n\n"}
	r := &Run{ID: "r1", Status: RunDone, Top1: []float64{0.75}}
	for _, c := range []struct {
		name   string
		rec    any
		format string
		want   []string // substrings of the output, or the output itself when one ends in "\n"
	}{
		// float32 shortest spelling: 0.1 (not 0.10000000149011612); RFC 4180 quotes.
		{"matrix csv", m, FormatCSV, []string{"class,n01,\"a,\"\"b\"\"\"\nn01,1,0.1\n\"a,\"\"b\"\"\",0.1,NaN\n"}},
		{"vectors csv", v, FormatCSV, []string{"id,d0,d1,d2\nn01,1.5,-2,1e-30\nn02,0,3,+Inf\n"}},
		{"matrix json", m, FormatJSON, []string{`"key":"sim/toy/visual/k"`, `"classes":["n01","a,\"b\""]`, `"data":[[1,0.1],[0.1,null]]`}},
		{"vectors json", v, FormatJSON, []string{`"ids":["n01","n02"]`, `"dim":3`, `"data":[[1.5,-2,1e-30],[0,3,null]]`}},
		{"article text", a, FormatText, []string{"The tench is a fish.\n"}},
		{"article json", a, FormatJSON, []string{`"title":"Tench"`, `"text":"The tench is a fish.\n\n"`}},
		{"run json", r, FormatJSON, []string{`"id":"r1"`, `"status":"done"`, `"top1":[0.75]`}},
	} {
		var b bytes.Buffer
		if err := Export(&b, "sim/toy/visual/k", c.rec, c.format); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := b.String()
		for _, w := range c.want {
			if strings.HasSuffix(w, "\n") && got != w || !strings.Contains(got, w) {
				t.Errorf("%s: got %q, want %q", c.name, got, w)
			}
		}
		if c.format == FormatJSON && !json.Valid(b.Bytes()) {
			t.Errorf("%s: invalid JSON %q", c.name, got)
		}
	}
	// .npy reads back as the table, in row order.
	var b bytes.Buffer
	if err := Export(&b, "vec/toy/d2v", v, FormatNPY); err != nil {
		t.Fatal(err)
	}
	rows, cols, data, err := npy.Read(&b)
	if err != nil || rows != 2 || cols != 3 || data[1] != -2 || float32(data[2]) != 1e-30 || !math.IsInf(data[5], 1) {
		t.Errorf("npy: %d×%d %v %v", rows, cols, data, err)
	}
	if tb := TableOf(v); tb.Kind != KindVectors || tb.Rows != 2 || tb.Cols != 3 || !slices.Equal(tb.IDs, v.IDs) {
		t.Errorf("TableOf(vectors) = %+v", tb)
	}
	if tb := TableOf(r); tb.Kind != KindRun || tb.Rows != 0 {
		t.Errorf("TableOf(run) = %+v", tb)
	}
	for _, c := range []struct {
		rec    any
		format string
	}{{m, FormatText}, {m, "xml"}} {
		if err := Export(&bytes.Buffer{}, "k", c.rec, c.format); err == nil {
			t.Errorf("%T as %s: no error", c.rec, c.format)
		}
	}
}
