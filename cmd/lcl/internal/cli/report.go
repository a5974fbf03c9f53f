package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/report"
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
	runs, title, missing, err := report.Select(ctx, st, report.Selection{Grids: opts.Grids, IDs: opts.Runs})
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
	if n := missing + skipped; n > 0 {
		verb := "are"
		if n == 1 {
			verb = "is"
		}
		f.Logf("report: %d of the %d selected runs %s not finished (or not run yet) and left out", n, n+len(entries), verb)
	}
	if len(entries) == 0 && len(opts.Grids) == 1 {
		return fmt.Errorf("report: no finished runs to report: run the grid first (lcl experiment run %s)", opts.Grids[0])
	}
	rep, err := report.Build(title, entries)
	if err != nil {
		return err
	}
	if opts.Out != "" {
		if err := rep.WriteDir(opts.Out); err != nil {
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
