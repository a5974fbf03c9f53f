package similarity

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/figure"
)

// Plots are the figures WritePlots wrote.
type Plots struct {
	Heatmap, Spectrum string  // the PNG files
	LargestEigenvalue float64 // of the matrix: the spectrum's first value
}

// WritePlots draws m into dir (created when missing): its dissimilarity
// 1 − s with the classes in average-linkage cluster order
// (SET-SOURCE-heatmap.png), and its eigenvalues, largest first
// (SET-SOURCE-spectrum.png). A matrix read from a file is named after the
// file (sims.npy → sims-heatmap.png). Each file is written whole or not at all.
func WritePlots(dir string, m *Matrix) (Plots, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Plots{}, err
	}
	stem := func(p string) string { // file name without folder and extension
		b := filepath.Base(p)
		return strings.ReplaceAll(strings.TrimSuffix(b, filepath.Ext(b)), " ", "_")
	}
	base, title := stem(m.Label), m.Label
	if m.LabelSet != "" {
		base = stem(m.LabelSet) + "-" + m.Kind
		title = fmt.Sprintf("%s similarity of %s (%d classes)", m.Kind, m.LabelSet, m.N())
	}
	c := m.N()
	var data []float64
	names, spectrumTitle := m.Names, "Eigenvalue spectrum: "+title
	var eig []float64
	var err error
	if c <= PlotExactClasses {
		data = make([]float64, c*c)
		for i, x := range m.Data {
			data[i] = float64(x)
		}
		eig, err = Eigenvalues(m.Data, c)
	} else {
		var k int
		data, names, k = binMeans(m.Data, c, PlotBins)
		eig, err = binnedEigenvalues(data, c, k)
		c = len(names)
		title += fmt.Sprintf(", means over bins of %d classes in class order", k)
		spectrumTitle = "Eigenvalues of the bin-averaged matrix (each ≤ the matrix's own): " + title
	}
	if err != nil {
		return Plots{}, err
	}
	order := ClusterOrder(data, c)
	p := Plots{Heatmap: filepath.Join(dir, base+"-heatmap.png"), Spectrum: filepath.Join(dir, base+"-spectrum.png"), LargestEigenvalue: eig[0]}
	if _, err := atomicfile.Write(p.Heatmap, 0o644, func(w io.Writer) error {
		return figure.Heatmap(w, data, names, order, "Dissimilarity 1 − s: "+title)
	}); err != nil {
		return Plots{}, err
	}
	if _, err := atomicfile.Write(p.Spectrum, 0o644, func(w io.Writer) error {
		return figure.Spectrum(w, eig, spectrumTitle)
	}); err != nil {
		return Plots{}, err
	}
	return p, nil
}

// PlotExactClasses is the most classes WritePlots draws entry by entry:
// clustering and the eigen-decomposition grow as C³. Larger matrices
// (ImageNet-21k) are drawn as PlotBins × PlotBins means over bins of
// consecutive classes.
const (
	PlotExactClasses = 2000
	PlotBins         = 1000
)

// binMeans averages a C×C matrix over bins of k = ⌈C/bins⌉ consecutive
// classes: the B×B matrix of block means, and bin names "first–last".
func binMeans(data []float32, c, bins int) ([]float64, []string, int) {
	k := (c + bins - 1) / bins
	b := (c + k - 1) / k
	sum := make([]float64, b*b)
	parallelDynamic(b, func(bi int) {
		acc := sum[bi*b : (bi+1)*b]
		for i := bi * k; i < min(bi*k+k, c); i++ {
			for j, x := range data[i*c : (i+1)*c] {
				acc[j/k] += float64(x)
			}
		}
	})
	size := func(bi int) float64 { return float64(min(bi*k+k, c) - bi*k) }
	names := make([]string, b)
	for bi := range names {
		names[bi] = fmt.Sprintf("%d–%d", bi*k, min(bi*k+k, c)-1)
		for bj := 0; bj < b; bj++ {
			sum[bi*b+bj] /= size(bi) * size(bj)
		}
	}
	return sum, names, k
}

// binnedEigenvalues returns the eigenvalues of P·S·P, S averaged over the
// bins of binMeans (P projects onto vectors constant on each bin): those of
// D^½·M·D^½ with M the bin means and D the bin sizes. By Cauchy's
// interlacing theorem the i-th is at most S's i-th eigenvalue.
func binnedEigenvalues(means []float64, c, k int) ([]float64, error) {
	b := (c + k - 1) / k
	scaled := make([]float64, b*b)
	for i := 0; i < b; i++ {
		for j := 0; j < b; j++ {
			si, sj := float64(min(i*k+k, c)-i*k), float64(min(j*k+k, c)-j*k)
			scaled[i*b+j] = math.Sqrt(si*sj) * means[i*b+j]
		}
	}
	return Eigenvalues(scaled, b)
}
