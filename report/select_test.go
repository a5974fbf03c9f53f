package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/simstore"
)

type runMap map[string]simstore.Run

func (f runMap) GetRun(_ context.Context, id string) (*simstore.Run, error) {
	if r, ok := f[id]; ok {
		return &r, nil
	}
	return nil, simstore.ErrNotFound
}

func (f runMap) ListRuns(context.Context) ([]simstore.Run, error) {
	var out []simstore.Run
	for _, r := range f {
		out = append(out, r)
	}
	return out, nil
}

func TestSelect(t *testing.T) {
	grid := filepath.Join(t.TempDir(), "g.yaml")
	os.WriteFile(grid, []byte("labels: fashion-mnist\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1, 2]\nstrategies: [{name: sl}]\n"), 0o644)
	g, err := experiment.Load(grid)
	if err != nil {
		t.Fatal(err)
	}
	runs := g.Expand()
	st := runMap{runs[0].ID: {ID: runs[0].ID, Config: runs[0].Config, Status: simstore.RunDone}, "rother": {ID: "rother"}}
	ctx := context.Background()
	got, title, missing, err := Select(ctx, st, Selection{Grids: []string{grid}})
	if err != nil || len(got) != 1 || got[0].ID != runs[0].ID || missing != 1 || title != "Grid g" {
		t.Errorf("grid: %d runs, %q, %d missing, %v", len(got), title, missing, err)
	}
	if got, _, _, err := Select(ctx, st, Selection{IDs: []string{"rother"}}); err != nil || len(got) != 1 {
		t.Errorf("ids: %v %v", got, err)
	}
	if _, _, _, err := Select(ctx, st, Selection{IDs: []string{"rnone"}}); err == nil || !strings.Contains(err.Error(), "run rnone") {
		t.Errorf("a missing id: %v", err)
	}
	if got, _, _, err := Select(ctx, st, Selection{}); err != nil || len(got) != 2 {
		t.Errorf("all: %d %v", len(got), err)
	}
	if _, _, _, err := Select(ctx, st, Selection{Grids: []string{grid}, IDs: []string{"x"}}); err == nil {
		t.Error("grids and ids together: no error")
	}
}
