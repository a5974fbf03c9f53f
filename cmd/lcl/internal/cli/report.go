package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/lcl-project/lcl/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/report"
	"github.com/lcl-project/lcl/simstore"
)

type reportOptions struct {
	Grids  []string
	Runs   []string
	Format string
	Out    string
	Title  string
}

func newReportCmd(f *Factory) *cobra.Command {
	var opts reportOptions
	cmd := &cobra.Command{
		Use:   "report [--grid GRID.yaml ... | --runs ID,...] [--format md|latex|csv] [--out DIR]",
		Short: "Tables, statistics and plots from stored runs",
		Long: `Report prints the paper-style tables of finished runs: one per data set and
metric (top-1, top-5), a block per data ratio, rows = models, columns =
methods (DML's peers as DML₁ and DML₂), mean and standard deviation over
seeds with the best mean in bold; then the methods' average ranks with the
Friedman test, the Iman–Davenport correction and the Nemenyi critical
difference, and the paired differences against SL and LS with their p-values
(paired t-test over seeds).

The runs are those of the given grid files, or the given run ids, or else
every finished run in the store. With --out, report also writes DIR/tables.md,
tables.tex, tables.csv, ranks.csv, paired.csv, the plots as DIR/plots/*.png
and DIR/report.html, a single self-contained file that embeds everything.`,
		Example: `  lcl report --grid experiments/demo.yaml
  lcl report --grid experiments/demo.yaml --out report/ && xdg-open report/report.html
  lcl report --runs r1a2b3c4d5e6f7a8b,r9c8d7e6f5a4b3c2d --format latex`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(report.Formats, opts.Format) {
				return usagef("--format must be one of %s, got %q", strings.Join(report.Formats, ", "), opts.Format)
			}
			if len(opts.Grids) > 0 && len(opts.Runs) > 0 {
				return usagef("give --grid or --runs, not both")
			}
			return runReport(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Grids, "grid", nil, "report the runs of this grid file (repeatable)")
	fl.StringSliceVar(&opts.Runs, "runs", nil, "report these run ids (comma-separated or repeated)")
	fl.StringVarP(&opts.Format, "format", "f", "md", "table format on stdout: md, latex or csv")
	fl.StringVarP(&opts.Out, "out", "o", "", "also write every table format, the plots and report.html into this folder")
	fl.StringVar(&opts.Title, "title", "", "report title (default: the grid names, or \"lcl report\")")
	return cmd
}

func runReport(ctx context.Context, f *Factory, opts reportOptions) error {
	st, err := f.ReadStore()
	if err != nil {
		return err
	}
	runs, title, missing, err := selectRuns(ctx, st, opts)
	if err != nil {
		return err
	}
	if opts.Title != "" {
		title = opts.Title
	}
	entries, skipped, err := report.FromRuns(runs)
	if err != nil {
		return err
	}
	if missing+skipped > 0 {
		f.Logf("report: %d of the selected runs are not finished (or not run yet) and are left out", missing+skipped)
	}
	rep, err := report.Build(title, entries)
	if err != nil {
		return err
	}
	if opts.Out != "" {
		if err := writeReportDir(rep, opts.Out); err != nil {
			return err
		}
	}
	if f.JSON {
		paths := map[string]any{"runs": rep.Runs}
		if opts.Out != "" {
			paths["html"] = filepath.Join(opts.Out, "report.html")
		}
		var buf bytes.Buffer
		if err := rep.Write(&buf, opts.Format); err != nil {
			return err
		}
		paths["tables"] = buf.String()
		paths["format"] = opts.Format
		f.Emit("report", paths)
		return nil
	}
	if err := rep.Write(f.IO.Out, opts.Format); err != nil {
		return err
	}
	if opts.Out != "" {
		abs, _ := filepath.Abs(filepath.Join(opts.Out, "report.html"))
		fmt.Fprintf(f.IO.Out, "\nHTML report: %s\n", abs)
	}
	return nil
}

// selectRuns picks the stored runs of the grids, the listed ids, or all.
func selectRuns(ctx context.Context, st *simstore.Store, opts reportOptions) (runs []simstore.Run, title string, missing int, err error) {
	switch {
	case len(opts.Grids) > 0:
		var names []string
		seen := map[string]bool{}
		for _, path := range opts.Grids {
			g, err := experiment.Load(path)
			if err != nil {
				return nil, "", 0, err
			}
			names = append(names, g.Name)
			for _, r := range g.Expand() {
				if seen[r.ID] {
					continue
				}
				seen[r.ID] = true
				rec, err := st.GetRun(ctx, r.ID)
				if errors.Is(err, simstore.ErrNotFound) {
					missing++
					continue
				}
				if err != nil {
					return nil, "", 0, err
				}
				runs = append(runs, *rec)
			}
		}
		return runs, "Grid " + strings.Join(names, ", "), missing, nil
	case len(opts.Runs) > 0:
		for _, id := range opts.Runs {
			rec, err := st.GetRun(ctx, id)
			if err != nil {
				return nil, "", 0, fmt.Errorf("run %s: %w", id, err)
			}
			runs = append(runs, *rec)
		}
		return runs, "lcl report", 0, nil
	}
	runs, err = st.ListRuns(ctx)
	return runs, "lcl report", 0, err
}

// writeReportDir writes every table format, the plots and the HTML report.
func writeReportDir(rep *report.Report, dir string) error {
	if err := rep.AddPlots(); err != nil {
		return fmt.Errorf("report: plots: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return err
	}
	files := map[string]func(io.Writer) error{
		"tables.md":   func(w io.Writer) error { return rep.Write(w, "md") },
		"tables.tex":  func(w io.Writer) error { return rep.Write(w, "latex") },
		"tables.csv":  func(w io.Writer) error { return rep.Write(w, "csv") },
		"ranks.csv":   rep.WriteRanksCSV,
		"paired.csv":  rep.WritePairedCSV,
		"report.html": rep.WriteHTML,
	}
	for name, write := range files {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return fmt.Errorf("report: %s: %w", name, err)
		}
		if err := writeAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err
		}
	}
	for _, p := range rep.Plots {
		if err := writeAtomic(filepath.Join(dir, "plots", p.Name), p.PNG); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to path so a crash leaves the old or the new file.
func writeAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}
