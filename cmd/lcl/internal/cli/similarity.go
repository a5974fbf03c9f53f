package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/similarity"
	simplot "github.com/lcl-project/lcl/similarity/plot"
	"github.com/lcl-project/lcl/simstore"
)

// sourceFlag is a flag of lcl similarity: one per source parameter name,
// documented from the sources' specs (similarity.Specs), so every default
// is written once. Only flags the user set are passed to the source.
type sourceFlag struct{ name, usage string }

// similarityFlags lists the built-in sources' parameters as flags, in the
// order of the sources in the help.
func similarityFlags() []sourceFlag {
	specs := similarity.Specs()
	var params []similarity.Param
	users := map[string][]string{} // parameter → the sources that take it
	for _, src := range []string{"semantic", "visual", "simrank", "lca", "matrix"} {
		for _, p := range specs[src].Params {
			if users[p.Name] == nil {
				params = append(params, p)
			}
			users[p.Name] = append(users[p.Name], src)
		}
	}
	out := make([]sourceFlag, len(params))
	for i, p := range params {
		usage := strings.Join(users[p.Name], ", ") + ": " + p.Help
		if p.Default != "" {
			usage += " (default " + p.Default + ")"
		}
		out[i] = sourceFlag{p.Name, usage}
	}
	return out
}

type similarityOptions struct {
	Synsets string
	Source  string
	Force   bool
	Params  []string
}

func newSimilarityCmd(f *Factory) *cobra.Command {
	opts := &similarityOptions{}
	cmd := &cobra.Command{
		Use:   "similarity --synsets SET --source SOURCE [flags]",
		Short: "Compute and inspect class similarity matrices",
		Long: `Compute a C×C class similarity matrix for a label set and store it with its
provenance (source, parameters, sha256 of every input). Running again with the
same inputs and parameters is a cache hit; --force recomputes.

Sources:
  semantic  cosine of the class vectors stored by lcl embed (--model)
  visual    cosine of class attribute vectors: AwA2 or CUB built-in, or
            --attributes FILE (--missing mean|zero)
  simrank   SimRank on a label graph (--graph, --decay, --iterations,
            --tolerance, --variant jeh-widom|star|undirected)
  lca       lowest-common-ancestor similarity (--graph, --form wup|height)
  matrix    import a precomputed C×C matrix (--file CSV or .npy)

Every matrix is normalised the same way: NaN/Inf rejected (naming the pair),
symmetrised as (S+Sᵀ)/2, negatives clamped to 0, diagonal set to 1.`,
		Example: `  lcl similarity --synsets awa2 --source visual
  lcl similarity --synsets nabirds --source simrank
  lcl similarity --synsets cifar100 --source simrank --variant star
  lcl similarity --synsets imagenet --source lca --form height
  lcl similarity --synsets awa2 --source matrix --file sims.npy
  lcl similarity show --synsets awa2 --source visual --top 5
  lcl similarity plot --synsets awa2 --source visual -o plots/
  lcl similarity compare awa2/visual awa2/lca`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Source == "" {
				return usagef("--source is required (semantic, visual, simrank, lca, matrix); see lcl similarity --help")
			}
			params, err := similarityParams(cmd, opts.Params)
			if err != nil {
				return err
			}
			return runSimilarity(cmd.Context(), f, opts, params)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Synsets, "synsets", "", "label set: built-in name or file")
	fl.StringVar(&opts.Source, "source", "", "similarity source: semantic, visual, simrank, lca, matrix")
	fl.BoolVar(&opts.Force, "force", false, "recompute even if a matrix with the same inputs is stored")
	fl.StringArrayVar(&opts.Params, "param", nil, "extra source parameter KEY=VALUE (repeatable)")
	for _, sf := range similarityFlags() {
		fl.String(sf.name, "", sf.usage)
	}
	cmd.AddCommand(newSimilarityShowCmd(f), newSimilarityPlotCmd(f), newSimilarityCompareCmd(f))
	return cmd
}

func similarityParams(cmd *cobra.Command, extra []string) (map[string]string, error) {
	params := map[string]string{}
	for _, sf := range similarityFlags() {
		if cmd.Flags().Changed(sf.name) {
			v, _ := cmd.Flags().GetString(sf.name)
			params[sf.name] = v
		}
	}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--param %q: want KEY=VALUE", kv)
		}
		params[k] = v
	}
	return params, nil
}

func (f *Factory) similarityDeps() similarity.Deps {
	return similarity.Deps{
		WordNet: f.WordNet,
		Vectors: lazyVectors{f},
		Progress: func(total int64, desc string) similarity.Progress {
			return f.Progress(total, desc)
		},
	}
}

// lazyVectors opens the store only when the semantic source reads it.
type lazyVectors struct{ f *Factory }

func (l lazyVectors) GetVectors(ctx context.Context, labelSet, model string) (*simstore.Vectors, error) {
	s, err := l.f.Store()
	if err != nil {
		return nil, err
	}
	return s.GetVectors(ctx, labelSet, model)
}

func (l lazyVectors) List(ctx context.Context, kind string) ([]simstore.Entry, error) {
	s, err := l.f.Store()
	if err != nil {
		return nil, err
	}
	return s.List(ctx, kind)
}

func runSimilarity(ctx context.Context, f *Factory, opts *similarityOptions, params map[string]string) error {
	set, err := f.LabelSet(opts.Synsets)
	if err != nil {
		return err
	}
	src, plugin, err := openSimilaritySource(ctx, f, opts.Source)
	if err != nil {
		return err
	}
	if plugin != nil {
		defer plugin.Close()
	}
	store, err := f.Store()
	if err != nil {
		return err
	}
	if prep, ok := src.(similarity.Preparer); ok && !opts.Force {
		prov, err := prep.Prepare(ctx, set, params)
		if err != nil {
			return fmt.Errorf("%s: %w", src.Name(), err)
		}
		m, err := store.GetMatrix(ctx, set.Name, src.Name(), prov.Params, prov.Inputs)
		switch {
		case err == nil:
			key := simstore.MatrixKey(set.Name, src.Name(), prov.Params, prov.Inputs)
			if !f.Emit("similarity", map[string]any{"label_set": set.Name, "source": src.Name(), "key": key, "cached": true, "classes": m.N(), "params": prov.Params}) {
				fmt.Fprintf(f.IO.Out, "cache hit: %s matrix of %s (%d×%d) with these inputs is already stored as %s (created %s); --force recomputes\n",
					src.Name(), set.Name, m.N(), m.N(), key, m.Provenance.CreatedAt.Format("2006-01-02 15:04:05"))
			}
			return nil
		case !errors.Is(err, simstore.ErrNotFound):
			return err
		}
	}
	if plugin != nil {
		// The plugin may open the store read-only: release ours meanwhile.
		if err := f.Close(); err != nil {
			return err
		}
	}
	res, err := similarity.Compute(ctx, src, set, params)
	if err != nil {
		return err
	}
	if store, err = f.Store(); err != nil {
		return err
	}
	data := make([]float32, len(res.Data))
	for i, x := range res.Data {
		data[i] = float32(x)
	}
	key, err := store.PutMatrix(ctx, simstore.Matrix{
		LabelSet: set.Name,
		Kind:     src.Name(),
		Classes:  res.Classes,
		Provenance: simstore.Provenance{
			Source: src.Name(),
			Params: res.Params,
			Inputs: res.Inputs,
			Tool:   "lcl " + Version,
		},
		Data: data,
	})
	if err != nil {
		return err
	}
	if f.Emit("similarity", map[string]any{"label_set": set.Name, "source": src.Name(), "key": key, "cached": false, "classes": res.N(), "params": res.Params, "inputs": res.Inputs, "notes": res.Notes}) {
		return nil
	}
	fmt.Fprintf(f.IO.Out, "stored %s matrix of %s (%d×%d) as %s\n", src.Name(), set.Name, res.N(), res.N(), key)
	fmt.Fprintf(f.IO.Out, "  params: %s\n", formatParams(res.Params))
	for _, n := range res.Notes {
		fmt.Fprintf(f.IO.Out, "  %s\n", n)
	}
	return nil
}

// openSimilaritySource returns the built-in source name, else the similarity
// plugin of that name (also returned, for the caller to close).
func openSimilaritySource(ctx context.Context, f *Factory, name string) (similarity.Source, *plugins.SimilaritySource, error) {
	if src, err := similarity.Lookup(f.similarityDeps(), name); err == nil {
		return src, nil, nil
	}
	host := newHost(f, 0)
	if _, err := host.Resolve(plugins.KindSimilarity, name); err != nil {
		return nil, nil, usagef("unknown similarity source %q: no built-in or plugin of that name (%v)", name, err)
	}
	ps, err := host.SimilaritySource(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return ps, ps, nil
}

func formatParams(p map[string]string) string {
	if len(p) == 0 {
		return "(none)"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

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
		s, err := f.Store()
		if err != nil {
			return nil, err
		}
		st = s
	}
	m, err := similarity.Resolve(ctx, st, ref)
	if errors.Is(err, simstore.ErrNotFound) {
		return nil, fmt.Errorf("%w (compute it with lcl similarity --synsets SET --source SOURCE)", err)
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
		set, err := labels.Load(synsets)
		if err != nil {
			return nil, err
		}
		return resolveMatrix(ctx, f, similarity.Ref{Source: source, SetName: set.Name}, "")
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
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
	order := similarity.ClusterOrder(m.Data, c)
	eig, err := similarity.Eigenvalues(m.Data, c)
	if err != nil {
		return err
	}
	heat := filepath.Join(dir, base+"-heatmap.png")
	if _, err := writeFileAtomic(heat, func(w io.Writer) error {
		return simplot.Heatmap(w, m.Data, m.Names, order, "Dissimilarity 1 − s: "+title)
	}); err != nil {
		return err
	}
	spec := filepath.Join(dir, base+"-spectrum.png")
	if _, err := writeFileAtomic(spec, func(w io.Writer) error {
		return simplot.Spectrum(w, eig, "Eigenvalue spectrum: "+title)
	}); err != nil {
		return err
	}
	if !f.Emit("plot", map[string]any{"heatmap": heat, "spectrum": spec, "largest_eigenvalue": eig[0]}) {
		fmt.Fprintf(f.IO.Out, "wrote %s\nwrote %s\n", heat, spec)
	}
	return nil
}

func newSimilarityCompareCmd(f *Factory) *cobra.Command {
	var synsets string
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Spearman correlation of two matrices' upper triangles",
		Long: `Print Spearman's rank correlation between the off-diagonal upper triangles
of two matrices of the same label set. A and B are store keys (sim/...),
SET/SOURCE (the latest stored matrix of that source) or CSV/.npy files.`,
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
			if a.N() != b.N() {
				return fmt.Errorf("%s has %d classes, %s has %d", args[0], a.N(), args[1], b.N())
			}
			if a.LabelSet != "" && b.LabelSet != "" && a.LabelSet != b.LabelSet {
				return fmt.Errorf("%s is a matrix of %s, %s of %s", args[0], a.LabelSet, args[1], b.LabelSet)
			}
			rho, err := similarity.Spearman(similarity.UpperTriangle(a.Data, a.N()), similarity.UpperTriangle(b.Data, b.N()))
			if err != nil {
				return err
			}
			pairs := a.N() * (a.N() - 1) / 2
			if !f.Emit("compare", map[string]any{"a": args[0], "b": args[1], "spearman": jsonFloat(rho), "pairs": pairs}) {
				fmt.Fprintf(f.IO.Out, "spearman %.4f over %d class pairs (%s vs %s)\n", rho, pairs, args[0], args[1])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&synsets, "synsets", "", "label set of matrices given as files")
	return cmd
}

// jsonFloat keeps NaN (a constant matrix) encodable.
func jsonFloat(x float64) any {
	if math.IsNaN(x) {
		return nil
	}
	return x
}
