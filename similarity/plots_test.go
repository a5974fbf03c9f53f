package similarity

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestWritePlots(t *testing.T) {
	data := []float32{1, 0.8, 0.1, 0.8, 1, 0.2, 0.1, 0.2, 1}
	stored := &Matrix{Data: data, IDs: []string{"a", "b", "c"}, Names: []string{"cat", "dog", "car"}, LabelSet: "toy", Kind: "visual", Label: "toy/visual"}
	file := &Matrix{Data: data, IDs: []string{"0", "1", "2"}, Names: []string{"0", "1", "2"}, Label: "/tmp/my sims.npy"}
	eig, err := Eigenvalues(data, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    *Matrix
		stem string
	}{{stored, "toy-visual"}, {file, "my_sims"}} {
		dir := filepath.Join(t.TempDir(), "new", "plots")
		p, err := WritePlots(dir, c.m)
		if err != nil {
			t.Fatal(err)
		}
		if p.Heatmap != filepath.Join(dir, c.stem+"-heatmap.png") || p.Spectrum != filepath.Join(dir, c.stem+"-spectrum.png") || p.LargestEigenvalue != eig[0] {
			t.Errorf("%s: %+v", c.m.Label, p)
		}
		for _, path := range []string{p.Heatmap, p.Spectrum} {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width < 100 || cfg.Height < 100 {
				t.Errorf("%s: %+v %v", path, cfg, err)
			}
		}
	}
}
