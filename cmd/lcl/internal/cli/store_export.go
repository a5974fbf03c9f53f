package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"

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

type exportOptions struct {
	Format string
	Output string
}

func runStoreExport(cmd *cobra.Command, f *Factory, key string, opts *exportOptions) error {
	format := opts.Format
	if format == "" && opts.Output != "" {
		format = simstore.ExportFormatOfPath(opts.Output)
	}
	if format != "" && !slices.Contains(simstore.ExportFormats(), format) {
		return usagef("--format %q: want csv, npy, json or text", format)
	}
	s, err := f.ReadStore()
	if err != nil {
		return err
	}
	rec, err := s.Record(cmd.Context(), key)
	if err != nil {
		if errors.Is(err, simstore.ErrNotFound) {
			return fmt.Errorf("no record at key %q%s (see lcl store ls)", key, keysUnder(cmd.Context(), s, key))
		}
		return err
	}
	t := simstore.TableOf(rec)
	if format == "" {
		format = simstore.DefaultExportFormat(t.Kind)
	}
	if formats := simstore.ExportFormatsOf(t.Kind); !slices.Contains(formats, format) {
		return usagef("a %s cannot be exported as %s (formats for a %s: %s)", t.Kind, format, t.Kind, strings.Join(formats, ", "))
	}
	write := func(w io.Writer) error { return simstore.Export(w, key, rec, format) }
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
	if format == simstore.FormatNPY {
		// .npy holds numbers only: the row ids go beside it.
		idsFile := strings.TrimSuffix(opts.Output, filepath.Ext(opts.Output)) + ".ids.txt"
		if _, err := writeFileAtomic(idsFile, func(w io.Writer) error {
			_, err := io.WriteString(w, strings.Join(t.IDs, "\n")+"\n")
			return err
		}); err != nil {
			return err
		}
		files = append(files, idsFile)
	}
	if !f.Emit("store_exported", map[string]any{"key": key, "format": format, "file": opts.Output, "bytes": n, "files": files, "shape": []int{t.Rows, t.Cols}}) {
		f.Logf("wrote %s (%s, %s)", strings.Join(files, " and "), format, humanBytes(n))
	}
	return nil
}

// writeFileAtomic writes path so a crash or error never leaves a partial
// file; it returns the number of bytes written.
func writeFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	return atomicfile.Write(path, 0o644, write)
}

// keysUnder is ": the keys under it are A, B, C (and N more)" when key is a
// prefix of stored keys (vec/fashion-mnist for vec/fashion-mnist/doc2vec-…),
// else "".
func keysUnder(ctx context.Context, s *simstore.Store, key string) string {
	entries, err := s.List(ctx, "")
	if err != nil || key == "" {
		return ""
	}
	prefix := strings.TrimSuffix(key, "/") + "/"
	var under []string
	for _, e := range entries {
		if strings.HasPrefix(e.Key, prefix) {
			under = append(under, e.Key)
		}
	}
	switch n := len(under); {
	case n == 0:
		return ""
	case n <= 3:
		return ": the keys under it are " + strings.Join(under, ", ")
	default:
		return fmt.Sprintf(": the keys under it are %s (and %d more)", strings.Join(under[:3], ", "), n-3)
	}
}
