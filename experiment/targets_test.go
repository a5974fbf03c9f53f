package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A soft run's key holds its --matrix file's content (RunConfig.Targets):
// a grid's run, its lcl train command line and its cell are one key;
// another content at the same path is another run; a file changed after
// the grid was read is refused before its run starts; and lcl's own
// --matrix (a similarity) keeps the key older stores hold.
func TestSoftRunKeyHoldsTheMatrixContent(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "targets.csv")
	write := func(text string) string {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		return hex.EncodeToString(sum[:])
	}
	first := write("0.9,0.1\n0.2,0.8\n")
	grid := []byte("labels: fashion-mnist\nmodels: [cnn]\nfractions: [0.1]\nseeds: [1]\nargs: {matrix: \"" + file + "\"}\nstrategies:\n" +
		"  - name: soft\n    params: {anneal: [\"0\", \"0.9\"]}\n" +
		"  - name: lcl\n")
	parse := func() []Run {
		g, err := Parse(grid)
		if err != nil {
			t.Fatal(err)
		}
		return g.Expand()
	}
	runs := parse()
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	for _, r := range runs {
		want := first
		if r.Config.Strategy == "lcl" {
			want = "" // a similarity: the key of older stores
		}
		if r.Config.Targets != want {
			t.Errorf("%s: targets %q, want %q", r.Describe(), r.Config.Targets, want)
		}
		// lcl train's command line of the run keys it the same way.
		args, err := r.TrainArgs("", false)
		if err != nil {
			t.Fatal(err)
		}
		s := parseTrain(t, args[1:]...)
		c, err := s.Config(true)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID() != r.ID {
			t.Errorf("%s: lcl train keys it %s (%+v), the grid %s (%+v)", r.Describe(), c.ID(), c, r.ID, r.Config)
		}
		// And a cell of the same keys.
		cell := Cell{Labels: "fashion-mnist", Model: "cnn", Fraction: &[]float64{0.1}[0], Strategy: r.Config.Strategy,
			Params: r.Config.Params, Seed: &[]int{1}[0], Args: map[string]string{"matrix": file}}
		if id := cell.Run().ID; id != r.ID {
			t.Errorf("%s: its cell is keyed %s, the grid %s", r.Describe(), id, r.ID)
		}
	}
	// The same path with another content: other soft runs, the same lcl run.
	write("0.8,0.2\n0.2,0.8\n")
	again := parse()
	for i, r := range again {
		if same := r.ID == runs[i].ID; same != (r.Config.Strategy == "lcl") {
			t.Errorf("%s: key %s after the file changed, %s before", r.Describe(), r.ID, runs[i].ID)
		}
	}
	// A run expanded before the change is refused when it is to start.
	if _, err := runs[0].TrainArgs("", false); err == nil || !strings.Contains(err.Error(), "--matrix "+file+": the file changed since the grid was read") {
		t.Errorf("a stale run starts: %v", err)
	}
	// A missing file fails the grid when it is read, naming the flag.
	os.Remove(file)
	if _, err := Parse(grid); err == nil || !strings.Contains(err.Error(), "--matrix: open "+file) {
		t.Errorf("a missing matrix: %v", err)
	}
}
