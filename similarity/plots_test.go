package similarity

import (
	"image/png"
	"math"
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

// Bin means average each block exactly, and the binned spectrum is a
// compression of the matrix: its i-th eigenvalue is at most the matrix's
// (Cauchy interlacing), the largest close to it for a smooth matrix.
func TestBinnedSpectrumInterlaces(t *testing.T) {
	const c = 53
	data := make([]float32, c*c)
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			data[i*c+j] = float32(1 / (1 + math.Abs(float64(i-j))/7))
		}
	}
	means, names, k := binMeans(data, c, 10)
	if k != 6 || len(names) != 9 || names[8] != "48–52" {
		t.Fatalf("bins of %d, names %v", k, names)
	}
	b := len(names)
	var sum float64 // the block of bins (1, 2): rows 6–11, columns 12–17
	for i := 6; i < 12; i++ {
		for j := 12; j < 18; j++ {
			sum += float64(data[i*c+j])
		}
	}
	if got := means[1*b+2]; math.Abs(got-sum/36) > 1e-12 {
		t.Errorf("mean of bins (1,2) = %v, want %v", got, sum/36)
	}
	binned, err := binnedEigenvalues(means, c, k)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := Eigenvalues(data, c)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range binned {
		if x > exact[i]+1e-9 {
			t.Errorf("binned eigenvalue %d = %v above the matrix's %v", i, x, exact[i])
		}
	}
	if binned[0] < 0.95*exact[0] {
		t.Errorf("largest binned eigenvalue %v, the matrix's %v", binned[0], exact[0])
	}
}

// Beyond PlotExactClasses WritePlots draws the bin means and says so.
func TestWritePlotsLargeMatrixBinned(t *testing.T) {
	const c = PlotExactClasses + 1
	m := &Matrix{Data: make([]float32, c*c), IDs: make([]string, c), Names: make([]string, c), LabelSet: "big", Kind: "lca", Label: "big/lca"}
	for i := 0; i < c; i++ {
		for j := 0; j < c; j++ {
			if i/100 == j/100 {
				m.Data[i*c+j] = 0.8
			}
		}
		m.Data[i*c+i] = 1
	}
	p, err := WritePlots(t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p.Heatmap, p.Spectrum} {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.DecodeConfig(fh); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		fh.Close()
	}
	// 21 blocks of 100 classes at 0.8 (the last of one): about 80 each.
	if p.LargestEigenvalue < 70 || p.LargestEigenvalue > 81 {
		t.Errorf("largest binned eigenvalue %v, want about 80", p.LargestEigenvalue)
	}
}
