package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
)

// loadMatrixRef resolves a matrix reference (similarity.ParseRef): a file
// (class names from --synsets when given), a store key, or SET/SOURCE.
func loadMatrixRef(ctx context.Context, f *Factory, arg, synsets string) (*similarity.Matrix, error) {
	ref, err := similarity.ParseRef(arg)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return resolveMatrix(ctx, f, ref, synsets)
}

// resolveMatrix finds a matrix to inspect; a file is normalised as a stored
// matrix is.
func resolveMatrix(ctx context.Context, f *Factory, ref similarity.Ref, synsets string) (*similarity.Matrix, error) {
	var st similarity.MatrixStore
	if ref.File != "" {
		ref.Normalize = true
		if synsets != "" {
			set, err := f.LabelSet(synsets)
			if err != nil {
				return nil, err
			}
			ref.Set = set
		}
	} else {
		s, err := f.ReadStore()
		if err != nil {
			return nil, err
		}
		st = s
	}
	m, err := similarity.Resolve(ctx, st, ref)
	if errors.Is(err, simstore.ErrNotFound) {
		switch {
		case ref.SetName != "" && ref.Source != "":
			return nil, fmt.Errorf("%w (compute it with lcl similarity --synsets %s --source %s)", err, ref.SetName, ref.Source)
		case ref.Key != "":
			return nil, fmt.Errorf("%w (the stored matrices: lcl store ls --kind matrix)", err)
		}
		return nil, fmt.Errorf("%w (compute it with lcl similarity --synsets SET --source SOURCE)", err)
	}
	if err == nil && st != nil {
		// Read: release the store and the value-log pages the read mapped
		// (1.9 GB for an ImageNet-21k matrix); it reopens on demand.
		err = f.Close()
	}
	return m, err
}

// loadFromFlags loads show/plot's matrix: the argument, or the latest matrix
// of --source for --synsets.
func loadFromFlags(ctx context.Context, f *Factory, args []string, synsets, source string) (*similarity.Matrix, error) {
	switch {
	case len(args) == 1 && source == "":
		return loadMatrixRef(ctx, f, args[0], synsets)
	case len(args) == 0 && synsets != "" && source != "":
		set, err := f.LabelSet(synsets) // named (imagenet21k's names come from WordNet)
		if err != nil {
			return nil, err
		}
		return resolveMatrix(ctx, f, similarity.Ref{Source: source, SetName: set.Name, Set: set}, "")
	default:
		return nil, usagef("give a matrix (FILE, store key or SET/SOURCE) or --synsets SET --source SOURCE")
	}
}

type similarityShowOptions struct {
	Synsets, Source string
	Top             int
}

func newSimilarityShowCmd(f *Factory) *cobra.Command {
	opts := &similarityShowOptions{}
	cmd := &cobra.Command{
		Use:   "show [MATRIX]",
		Short: "List each class's nearest classes in a stored matrix",
		Long: `List each class's most similar classes. MATRIX is a store key (sim/...),
SET/SOURCE (the latest stored matrix of that source), or a CSV/.npy file; or
give --synsets and --source.`,
		Example: `  lcl similarity show --synsets cifar100 --source semantic --top 5
  lcl similarity show awa2/visual --top 2
  lcl similarity show sims.npy --synsets awa2`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Top < 1 {
				return usagef("--top must be at least 1")
			}
			m, err := loadFromFlags(cmd.Context(), f, args, opts.Synsets, opts.Source)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			if !f.JSON {
				fmt.Fprintf(tw, "CLASS\tNEAREST (similarity)\n")
			}
			c := m.N()
			for i := 0; i < c; i++ {
				nn := similarity.Nearest(m.Data, c, i, opts.Top)
				if f.JSON {
					list := make([]map[string]any, len(nn))
					for k, x := range nn {
						list[k] = map[string]any{"index": x.Index, "class": m.Names[x.Index], "similarity": x.Score}
					}
					f.Emit("neighbours", map[string]any{"index": i, "class": m.Names[i], "nearest": list})
					continue
				}
				parts := make([]string, len(nn))
				for k, x := range nn {
					parts[k] = fmt.Sprintf("%s (%.3f)", m.Names[x.Index], x.Score)
				}
				fmt.Fprintf(tw, "%s\t%s\n", m.Names[i], strings.Join(parts, ", "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&opts.Synsets, "synsets", "", "label set of the matrix")
	cmd.Flags().StringVar(&opts.Source, "source", "", "source of the matrix (the latest stored one is shown)")
	cmd.Flags().IntVar(&opts.Top, "top", 5, "neighbours per class")
	return cmd
}

type similarityPlotOptions struct {
	Synsets, Source, Out string
}

func newSimilarityPlotCmd(f *Factory) *cobra.Command {
	opts := &similarityPlotOptions{}
	cmd := &cobra.Command{
		Use:   "plot [MATRIX]",
		Short: "Plot a matrix: clustered dissimilarity heatmap and eigenvalue spectrum (PNG)",
		Long: `Write two PNG files into the output folder:
  <set>-<source>-heatmap.png   the dissimilarity 1 − s, classes ordered by
                               average-linkage hierarchical clustering, with a
                               colour bar (class names on the axes up to 60 classes)
  <set>-<source>-spectrum.png  the eigenvalues of s, largest first`,
		Example: `  lcl similarity plot --synsets awa2 --source visual -o plots/
  lcl similarity plot cifar100/semantic`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := loadFromFlags(cmd.Context(), f, args, opts.Synsets, opts.Source)
			if err != nil {
				return err
			}
			return runSimilarityPlot(f, m, opts.Out)
		},
	}
	cmd.Flags().StringVar(&opts.Synsets, "synsets", "", "label set of the matrix")
	cmd.Flags().StringVar(&opts.Source, "source", "", "source of the matrix (the latest stored one is plotted)")
	cmd.Flags().StringVarP(&opts.Out, "out", "o", ".", "output folder")
	return cmd
}

func runSimilarityPlot(f *Factory, m *similarity.Matrix, dir string) error {
	p, err := similarity.WritePlots(dir, m)
	if err != nil {
		return err
	}
	if !f.Emit("plot", map[string]any{"heatmap": p.Heatmap, "spectrum": p.Spectrum, "largest_eigenvalue": p.LargestEigenvalue}) {
		fmt.Fprintf(f.IO.Out, "wrote %s\nwrote %s\n", p.Heatmap, p.Spectrum)
	}
	return nil
}

func newSimilarityCompareCmd(f *Factory) *cobra.Command {
	var synsets string
	var maxPairs int
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Spearman correlation of two matrices' upper triangles",
		Long: `Print Spearman's rank correlation between the off-diagonal upper triangles
of two matrices of the same label set. A and B are store keys (sim/...),
SET/SOURCE (the latest stored matrix of that source) or CSV/.npy files.
Matrices with more class pairs than --pairs (ImageNet-21k has 238 M) are
compared on that many pairs drawn uniformly with a fixed seed; the output
says so.`,
		Example: `  lcl similarity compare awa2/visual awa2/lca
  lcl similarity compare imagenet/simrank my-sims.npy`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("compare takes two matrices, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := loadMatrixRef(cmd.Context(), f, args[0], synsets)
			if err != nil {
				return err
			}
			b, err := loadMatrixRef(cmd.Context(), f, args[1], synsets)
			if err != nil {
				return err
			}
			if maxPairs < 1 {
				return usagef("--pairs must be at least 1")
			}
			rho, pairs, err := similarity.CompareSample(a, b, maxPairs)
			if err != nil {
				return err
			}
			all := a.N() * (a.N() - 1) / 2
			if !f.Emit("compare", map[string]any{"a": args[0], "b": args[1], "spearman": jsonFloat(rho), "pairs": pairs, "class_pairs": all}) {
				sample := ""
				if pairs < all {
					sample = fmt.Sprintf(" (a uniform sample of the %d; --pairs)", all)
				}
				fmt.Fprintf(f.IO.Out, "spearman %.4f over %d class pairs%s (%s vs %s)\n", rho, pairs, sample, args[0], args[1])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&synsets, "synsets", "", "label set of matrices given as files")
	cmd.Flags().IntVar(&maxPairs, "pairs", similarity.DefaultComparePairs, "most class pairs to rank; larger matrices are compared on a uniform sample of this many")
	return cmd
}

// jsonFloat keeps NaN (a constant matrix) encodable.
func jsonFloat(x float64) any {
	if math.IsNaN(x) {
		return nil
	}
	return x
}
