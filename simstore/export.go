package simstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/npy"
)

// Export formats of a record (lcl store export, docs/store.md).
const (
	FormatCSV  = "csv"  // matrices and vectors: a header, then one row per class
	FormatNPY  = "npy"  // matrices and vectors: a float32 array (NumPy format 1.0, '<f4')
	FormatJSON = "json" // every kind: the record, its data as rows
	FormatText = "text" // articles: the text only
)

// ExportFormats lists every export format.
func ExportFormats() []string { return []string{FormatCSV, FormatNPY, FormatJSON, FormatText} }

// ExportFormatsOf lists the formats a record of kind can be exported in,
// its default first (but articles, whose default is text).
func ExportFormatsOf(kind string) []string {
	switch kind {
	case KindMatrix, KindVectors:
		return []string{FormatCSV, FormatNPY, FormatJSON}
	case KindArticle:
		return []string{FormatJSON, FormatText}
	case KindRun, KindModel:
		return []string{FormatJSON}
	}
	return nil
}

// DefaultExportFormat is the format of a record of kind exported without
// one: csv for matrices and vectors, text for articles, json for runs.
func DefaultExportFormat(kind string) string {
	if kind == KindArticle {
		return FormatText
	}
	if f := ExportFormatsOf(kind); len(f) > 0 {
		return f[0]
	}
	return ""
}

// ExportFormatOfPath is the format a file name asks for by its extension
// (.csv, .npy, .json, .txt), "" for any other.
func ExportFormatOfPath(path string) string {
	return map[string]string{".csv": FormatCSV, ".npy": FormatNPY, ".json": FormatJSON, ".txt": FormatText}[strings.ToLower(filepath.Ext(path))]
}

// Table is the numbers of a matrix or vectors record: rows × cols values in
// row-major order, one row id per row. A record of another kind has none.
type Table struct {
	Kind       string
	Rows, Cols int
	IDs        []string
	Data       []float32
}

// TableOf returns a record's kind and, for matrices and vectors, its table.
func TableOf(rec any) Table {
	switch r := rec.(type) {
	case *Matrix:
		return Table{KindMatrix, r.N(), r.N(), r.Classes, r.Data}
	case *Vectors:
		return Table{KindVectors, len(r.IDs), r.Dim, r.IDs, r.Data}
	case *Article:
		return Table{Kind: KindArticle}
	case *Model:
		return Table{Kind: KindModel}
	default:
		return Table{Kind: KindRun}
	}
}

// Export writes the record rec stored at key to w in format, which must be
// one of ExportFormatsOf its kind. Values are written with the fewest
// digits that read back as the same float32; NaN is "NaN" in CSV and null
// (as ±Inf) in JSON. JSON is compact: an indented 1000×1000 matrix would take
// a million lines.
func Export(w io.Writer, key string, rec any, format string) error {
	t := TableOf(rec)
	switch format {
	case FormatCSV:
		return t.writeCSV(w)
	case FormatNPY:
		return npy.WriteFloat32(w, t.Rows, t.Cols, t.Data)
	case FormatText:
		a, ok := rec.(*Article)
		if !ok {
			return fmt.Errorf("simstore: a %s has no text", t.Kind)
		}
		_, err := io.WriteString(w, strings.TrimRight(a.Text, "\n")+"\n")
		return err
	case FormatJSON:
		var v any = rec
		switch r := rec.(type) {
		case *Matrix:
			v = struct {
				Key string `json:"key"`
				*Matrix
				Data json.RawMessage `json:"data"`
			}{key, r, dataPlaceholder}
		case *Vectors:
			v = struct {
				Key string `json:"key"`
				*Vectors
				Data json.RawMessage `json:"data"`
			}{key, r, dataPlaceholder}
		default:
			return json.NewEncoder(w).Encode(v)
		}
		// The record's fields, then its data streamed row by row in place of
		// the placeholder: a 21,843² matrix is 5 GB of JSON text.
		var head bytes.Buffer
		if err := json.NewEncoder(&head).Encode(v); err != nil {
			return err
		}
		before, after, ok := bytes.Cut(head.Bytes(), dataPlaceholder)
		if !ok {
			return fmt.Errorf("simstore: export %s: no place for the data", key)
		}
		if _, err := w.Write(before); err != nil {
			return err
		}
		if err := t.writeJSONRows(w); err != nil {
			return err
		}
		_, err := w.Write(after)
		return err
	}
	return fmt.Errorf("simstore: export format %q: want one of %s", format, strings.Join(ExportFormats(), ", "))
}

func appendFloat(b []byte, v float32) []byte {
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}

// csvField quotes s as RFC 4180 asks when it holds a separator, quote or newline.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// writeCSV writes the header ("class,ID1,…" for a matrix, "id,d0,…" for
// vectors), then one row per id.
func (t Table) writeCSV(w io.Writer) error {
	var b []byte
	if t.Kind == KindMatrix {
		b = append(b, "class"...)
		for _, id := range t.IDs {
			b = append(append(b, ','), csvField(id)...)
		}
	} else {
		b = append(b, "id"...)
		for j := range t.Cols {
			b = append(b, ",d"...)
			b = strconv.AppendInt(b, int64(j), 10)
		}
	}
	b = append(b, '\n')
	for i := range t.Rows {
		b = append(b, csvField(t.IDs[i])...)
		for _, v := range t.Data[i*t.Cols : (i+1)*t.Cols] {
			b = appendFloat(append(b, ','), v)
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	_, err := w.Write(b)
	return err
}

// dataPlaceholder marks where Export streams a record's data into its JSON.
var dataPlaceholder = json.RawMessage(`"\u0000lcl-data\u0000"`)

// writeJSONRows writes the data as a JSON array of rows, a row at a time;
// NaN and ±Inf become null.
func (t Table) writeJSONRows(w io.Writer) error {
	b := []byte{'['}
	for i := range t.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, v := range t.Data[i*t.Cols : (i+1)*t.Cols] {
			if j > 0 {
				b = append(b, ',')
			}
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				b = append(b, "null"...)
				continue
			}
			b = appendFloat(b, v)
		}
		b = append(b, ']')
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	_, err := w.Write(append(b, ']'))
	return err
}
