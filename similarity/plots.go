package similarity

import (
	"fmt"
	"io"
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
	order := ClusterOrder(m.Data, c)
	eig, err := Eigenvalues(m.Data, c)
	if err != nil {
		return Plots{}, err
	}
	p := Plots{Heatmap: filepath.Join(dir, base+"-heatmap.png"), Spectrum: filepath.Join(dir, base+"-spectrum.png"), LargestEigenvalue: eig[0]}
	if _, err := atomicfile.Write(p.Heatmap, 0o644, func(w io.Writer) error {
		return figure.Heatmap(w, m.Data, m.Names, order, "Dissimilarity 1 − s: "+title)
	}); err != nil {
		return Plots{}, err
	}
	if _, err := atomicfile.Write(p.Spectrum, 0o644, func(w io.Writer) error {
		return figure.Spectrum(w, eig, "Eigenvalue spectrum: "+title)
	}); err != nil {
		return Plots{}, err
	}
	return p, nil
}
