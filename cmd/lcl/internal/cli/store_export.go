package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/npy"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/simstore"
)

func newStoreExportCmd(f *Factory) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export KEY",
		Short: "Write one record as CSV, NumPy .npy, JSON or text",
		Long: `Write the record at KEY (see lcl store ls) to stdout or to -o FILE.

  matrix   csv   header "class,ID1,…,IDC", then one row per class: ID, C values
           npy   C×C float32 array (NumPy format 1.0, little-endian '<f4')
           json  {"key", "label_set", "kind", "classes", "provenance", "data": [[…]…]}
  vectors  csv   header "id,d0,…,dD-1", then one row per class: ID, D values
           npy   N×D float32 array
           json  {"key", "label_set", "model", "ids", "dim", "meta", "data": [[…]…]}
  article  json  every field; text: the article text only
  run      json  every field

With -o FILE.npy the row ids are written to FILE.ids.txt as well (one per
line, in row order), since .npy holds numbers only. Values are printed with
the fewest digits that read back as the same float32; NaN is "NaN" in CSV and
null in JSON. -o writes a temporary file and renames it, so FILE is never left
half-written. Without --format the format comes from FILE's extension
(.csv, .npy, .json, .txt), else csv for matrices and vectors, text for
articles and json for runs.`,
		Example: `  lcl store export sim/imagenet/semantic/0123abcd4567ef89 --format npy -o semantic.npy
  python3 -c 'import numpy; print(numpy.load("semantic.npy").shape)'
  lcl store export vec/cifar100/d2v-d100 --format csv -o vectors.csv
  lcl store export art/imagenet/n01440764 --format text`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("lcl store export needs exactly one KEY (see lcl store ls), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStoreExport(cmd, f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "", "csv, npy, json or text (default: from -o's extension, else by kind)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to FILE instead of stdout")
	return cmd
}

func runStoreExport(cmd *cobra.Command, f *Factory, key string, opts *exportOptions) error {
	format := opts.Format
	if format == "" && opts.Output != "" {
		switch strings.ToLower(filepath.Ext(opts.Output)) {
		case ".csv":
			format = "csv"
		case ".npy":
			format = "npy"
		case ".json":
			format = "json"
		case ".txt":
			format = "text"
		}
	}
	if format != "" && !contains([]string{"csv", "npy", "json", "text"}, format) {
		return usagef("--format %q: want csv, npy, json or text", format)
	}
	s, err := f.ReadStore()
	if err != nil {
		return err
	}
	rec, err := s.Record(cmd.Context(), key)
	if err != nil {
		if errors.Is(err, simstore.ErrNotFound) {
			return fmt.Errorf("no record at key %q (see lcl store ls)", key)
		}
		return err
	}
	kind, rows, cols, ids, data := recordShape(rec)
	if format == "" {
		format = exportFormats[kind][0]
		if kind == simstore.KindArticle {
			format = "text"
		}
	}
	if !contains(exportFormats[kind], format) {
		return usagef("a %s cannot be exported as %s (formats for a %s: %s)", kind, format, kind, strings.Join(exportFormats[kind], ", "))
	}
	write := func(w io.Writer) error {
		switch format {
		case "csv":
			return writeCSV(w, kind, ids, rows, cols, data)
		case "npy":
			return npy.WriteFloat32(w, rows, cols, data)
		case "text":
			_, err := io.WriteString(w, strings.TrimRight(rec.(*simstore.Article).Text, "\n")+"\n")
			return err
		default:
			return writeRecordJSON(w, key, rec, rows, cols, data)
		}
	}
	if opts.Output == "" || opts.Output == "-" {
		bw := bufio.NewWriter(f.IO.Out)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	n, err := writeFileAtomic(opts.Output, write)
	if err != nil {
		return err
	}
	files := []string{opts.Output}
	if format == "npy" {
		idsFile := strings.TrimSuffix(opts.Output, filepath.Ext(opts.Output)) + ".ids.txt"
		if _, err := writeFileAtomic(idsFile, func(w io.Writer) error {
			_, err := io.WriteString(w, strings.Join(ids, "\n")+"\n")
			return err
		}); err != nil {
			return err
		}
		files = append(files, idsFile)
	}
	if !f.Emit("store_exported", map[string]any{"key": key, "format": format, "file": opts.Output, "bytes": n, "files": files, "shape": []int{rows, cols}}) {
		f.Logf("wrote %s (%s, %s)", strings.Join(files, " and "), format, humanBytes(n))
	}
	return nil
}

// recordShape returns a record's kind and, for matrices and vectors, its
// row count, column count, row ids and row-major data.
func recordShape(rec any) (kind string, rows, cols int, ids []string, data []float32) {
	switch r := rec.(type) {
	case *simstore.Matrix:
		return simstore.KindMatrix, r.N(), r.N(), r.Classes, r.Data
	case *simstore.Vectors:
		return simstore.KindVectors, len(r.IDs), r.Dim, r.IDs, r.Data
	case *simstore.Article:
		return simstore.KindArticle, 0, 0, nil, nil
	default:
		return simstore.KindRun, 0, 0, nil, nil
	}
}

func appendFloat(b []byte, v float32) []byte {
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func writeCSV(w io.Writer, kind string, ids []string, rows, cols int, data []float32) error {
	var b []byte
	if kind == simstore.KindMatrix {
		b = append(b, "class"...)
		for _, id := range ids {
			b = append(append(b, ','), csvField(id)...)
		}
	} else {
		b = append(b, "id"...)
		for j := range cols {
			b = append(b, ",d"...)
			b = strconv.AppendInt(b, int64(j), 10)
		}
	}
	b = append(b, '\n')
	for i := range rows {
		b = append(b, csvField(ids[i])...)
		for _, v := range data[i*cols : (i+1)*cols] {
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

// jsonRows renders data as a JSON array of rows; NaN and ±Inf become null.
func jsonRows(rows, cols int, data []float32) json.RawMessage {
	var b bytes.Buffer
	b.Grow(rows * cols * 10)
	b.WriteByte('[')
	num := make([]byte, 0, 32)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for j, v := range data[i*cols : (i+1)*cols] {
			if j > 0 {
				b.WriteByte(',')
			}
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				b.WriteString("null")
				continue
			}
			b.Write(appendFloat(num[:0], v))
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	return b.Bytes()
}

func writeRecordJSON(w io.Writer, key string, rec any, rows, cols int, data []float32) error {
	var v any
	switch r := rec.(type) {
	case *simstore.Matrix:
		v = struct {
			Key string `json:"key"`
			*simstore.Matrix
			Data json.RawMessage `json:"data"`
		}{key, r, jsonRows(rows, cols, data)}
	case *simstore.Vectors:
		v = struct {
			Key string `json:"key"`
			*simstore.Vectors
			Data json.RawMessage `json:"data"`
		}{key, r, jsonRows(rows, cols, data)}
	default:
		v = rec
	}
	// Compact: an indented 1000×1000 matrix would take a million lines.
	return json.NewEncoder(w).Encode(v)
}

// writeFileAtomic writes path so a crash or error never leaves a partial
// file; it returns the number of bytes written.
func writeFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	return atomicfile.Write(path, 0o644, write)
}
