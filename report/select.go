package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/simstore"
)

// RunStore is where Select reads run records (*simstore.Store).
type RunStore interface {
	GetRun(ctx context.Context, id string) (*simstore.Run, error)
	ListRuns(ctx context.Context) ([]simstore.Run, error)
}

// Selection is what a report covers: the runs of grid files, else the
// runs of the given ids, else every stored run.
type Selection struct {
	Grids []string
	IDs   []string
}

// Select reads the selected runs, a title for them, and how many of a
// grid's runs the store does not hold (not run yet).
func Select(ctx context.Context, st RunStore, sel Selection) (runs []simstore.Run, title string, missing int, err error) {
	switch {
	case len(sel.Grids) > 0 && len(sel.IDs) > 0:
		return nil, "", 0, errors.New("select the runs of grids or by id, not both")
	case len(sel.Grids) > 0:
		var names []string
		seen := map[string]bool{}
		for _, path := range sel.Grids {
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
	case len(sel.IDs) > 0:
		for _, id := range sel.IDs {
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

// WriteDir writes the report's folder: every table format (tables.md,
// tables.tex, tables.csv), ranks.csv, paired.csv, the plots as
// plots/*.png and report.html, each file atomically.
func (r *Report) WriteDir(dir string) error {
	if err := r.AddPlots(); err != nil {
		return fmt.Errorf("report: plots: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return err
	}
	files := map[string]func(io.Writer) error{
		"tables.md":    func(w io.Writer) error { return r.Write(w, "md") },
		"tables.tex":   func(w io.Writer) error { return r.Write(w, "latex") },
		"tables.csv":   func(w io.Writer) error { return r.Write(w, "csv") },
		"ranks.csv":    r.WriteRanksCSV,
		"paired.csv":   r.WritePairedCSV,
		"severity.csv": r.WriteSeverityCSV,
		"report.html":  r.WriteHTML,
	}
	for name, write := range files {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return fmt.Errorf("report: %s: %w", name, err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	for _, p := range r.Plots {
		if err := atomicfile.WriteFile(filepath.Join(dir, "plots", p.Name), p.PNG, 0o644); err != nil {
			return err
		}
	}
	return nil
}
