package curriculum_test

import (
	"context"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/curriculum"
	"github.com/lcl-project/lcl/internal/npy"
)

// LCL's preview writes v(0), v(1), ... of the worked example (ε = 0.5,
// derived by hand: row 0 [1, .5, .5] → [.5, .25, .25] → [.8, .1, .1]; row 1
// reaches [1/48, 11/12, 1/16] at epoch 2), their statistics and the classes.
func TestWritePreviewLCL(t *testing.T) {
	ctx := context.Background()
	st, info := newBuiltin(t, "lcl")
	b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Params: map[string]string{"epsilon": "0.5"}, Classes: threeClasses(),
		Similarity: workedExample(), Labels: []int{0, 1, 2}, Epochs: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "plan")
	var calls [][2]int
	p, err := curriculum.WritePreview(ctx, b, dir, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Epochs) != 3 || p.Files != 3 || p.Stopped != "" || len(calls) != 3 || calls[2] != [2]int{3, 3} {
		t.Fatalf("preview %+v, progress %v", p, calls)
	}
	want := map[string][]float64{
		"epoch-000.npy": {0.5, 0.25, 0.25},
		"epoch-001.npy": {0.8, 0.1, 0.1},
	}
	for file, row0 := range want {
		r, c, data, err := npy.ReadFile(filepath.Join(dir, file))
		if err != nil || r != 3 || c != 3 {
			t.Fatalf("%s: %d×%d %v", file, r, c, err)
		}
		for j, w := range row0 { // targets are float32
			if math.Abs(data[j]-w) > 1e-7 {
				t.Errorf("%s row 0 = %v, want %v", file, data[:3], row0)
			}
		}
	}
	_, _, last, err := npy.ReadFile(filepath.Join(dir, "epoch-002.npy"))
	if err != nil || math.Abs(last[3]-1./48) > 1e-7 || math.Abs(last[4]-11./12) > 1e-7 || math.Abs(last[5]-1./16) > 1e-7 {
		t.Errorf("epoch 2 row 1 = %v, %v", last[3:6], err)
	}
	f, err := os.Open(filepath.Join(dir, "curriculum.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 4 || rows[0][4] != "mean_true_mass" || rows[3][2] != "2" {
		t.Fatalf("curriculum.csv: %v %v", rows, err)
	}
	// Epoch 0's true-class mass is the mean diagonal of the normalised rows.
	if m, _ := strconv.ParseFloat(rows[1][4], 64); math.Abs(m-(0.5+5./9+0.8)/3) > 1e-7 || math.Abs(m-p.Epochs[0].TrueMass) > 1e-9 {
		t.Errorf("epoch 0 mean true mass %v (preview %v)", m, p.Epochs[0].TrueMass)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "classes.txt")); err != nil || string(b) != "0\ta\ta\n1\tb\tb\n2\tc\tc\n" {
		t.Errorf("classes.txt %q %v", b, err)
	}
	pf, err := os.Open(filepath.Join(dir, "curriculum.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.DecodeConfig(pf); err != nil {
		t.Errorf("curriculum.png: %v", err)
	}
}

// Strategies of several stages get a folder per stage; cn's curriculum
// needs a trained model's features and is not planned.
func TestWritePreviewStages(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, stopped, after string
		files                []string
	}{
		{"kd", "", "", []string{"teacher/epoch-000.npy", "teacher/epoch-001.npy", "student/epoch-001.npy"}},
		{"cn", "curriculum", "pretrain", []string{"pretrain/epoch-001.npy"}},
	} {
		st, info := newBuiltin(t, c.name)
		b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Classes: threeClasses(), Labels: []int{0, 1, 2}, Epochs: 2})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		p, err := curriculum.WritePreview(ctx, b, dir, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Stopped != c.stopped || p.After != c.after || p.Files != len(p.Epochs) {
			t.Errorf("%s: %+v", c.name, p)
		}
		for _, f := range c.files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
}

// A plan with a fixed classifier (haframe) writes its class vectors once,
// as classifier.npy, and its cosine coefficient in curriculum.csv.
func TestWritePreviewClassifier(t *testing.T) {
	ctx := context.Background()
	st, info := newBuiltin(t, "haframe")
	b, err := curriculum.New(ctx, st, curriculum.Run{Info: info, Classes: threeClasses(), Similarity: workedExample(),
		Labels: []int{0, 1, 2}, Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := curriculum.WritePreview(ctx, b, dir, nil); err != nil {
		t.Fatal(err)
	}
	r, c, v, err := npy.ReadFile(filepath.Join(dir, "classifier.npy"))
	if err != nil || r != 3 || c != 3 {
		t.Fatalf("classifier.npy: %d×%d %v", r, c, err)
	}
	for i := range 3 { // unit class vectors: the diagonal of S is 1
		n := v[i*3]*v[i*3] + v[i*3+1]*v[i*3+1] + v[i*3+2]*v[i*3+2]
		if math.Abs(n-1) > 1e-6 {
			t.Errorf("class vector %d has squared norm %g, want 1", i, n)
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, "curriculum.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",group,cosine,consistency,dissimilar,geometric") ||
		!strings.HasSuffix(lines[1], ",0,0.4,0,0,0") {
		t.Errorf("curriculum.csv:\n%s", text)
	}
}
