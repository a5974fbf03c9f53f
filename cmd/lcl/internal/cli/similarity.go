package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/classvec"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/simstore"
)

// sourceFlag is a flag of lcl similarity: one per source parameter name,
// documented from the sources' specs (similarity.Builtins), so every default
// is written once. Only flags the user set are passed to the source.
type sourceFlag struct{ name, usage string }

// similarityFlags lists the built-in sources' parameters as flags, in the
// order of the sources in the help.
func similarityFlags() []sourceFlag {
	specs := similarity.Builtins()
	var params []similarity.Param
	users := map[string][]string{} // parameter → the sources that take it
	// The help's order, then any source added later (its flags too).
	order := []string{"semantic", "visual", "simrank", "lca", "matrix"}
	for _, n := range slices.Sorted(maps.Keys(specs)) {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, src := range order {
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
	Synsets   string
	Source    string
	Force     bool
	Params    []string
	MaxMemory string
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
  semantic  cosine of the class vectors stored by lcl embed (--model); a
            label set without any is embedded first, from the stored
            corpus model (one line says so)
  visual    cosine of class attribute vectors: AwA2 or CUB built-in, or
            --attributes FILE (--missing mean|zero)
  simrank   SimRank on a label graph (--graph, --decay, --iterations,
            --tolerance, --variant jeh-widom|star|undirected)
  lca       lowest-common-ancestor similarity (--graph, --form wup|height)
  matrix    import a precomputed C×C matrix (--file CSV or .npy)

Every matrix is normalised the same way: NaN/Inf rejected (naming the pair),
symmetrised as (S+Sᵀ)/2, negatives clamped to 0, diagonal set to 1.

Matrices are float32: ImageNet-21k's 21,843 classes make a 1.9 GB matrix,
which semantic, lca and simrank each compute in under a minute on two cores
(docs/similarity.md). A computation whose memory estimate exceeds
--max-memory (default: this machine's memory) is refused before it starts,
with the estimate in the message.`,
		Example: `  lcl similarity --synsets awa2 --source visual
  lcl similarity --synsets nabirds --source simrank
  lcl similarity --synsets cifar100 --source simrank --variant star
  lcl similarity --synsets imagenet --source lca --form height
  lcl similarity --synsets imagenet21k --source lca --max-memory 8GB
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
	fl.StringVar(&opts.MaxMemory, "max-memory", "", "refuse computations estimated to need more memory than this (8GB, 6GiB; default: this machine's memory)")
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

func runSimilarity(ctx context.Context, f *Factory, opts *similarityOptions, params map[string]string) error {
	set, err := f.LabelSet(opts.Synsets)
	if err != nil {
		return err
	}
	var limit int64
	if opts.MaxMemory != "" {
		if limit, err = similarity.ParseBytes(opts.MaxMemory); err != nil {
			return usagef("--max-memory: %v", err)
		}
	}
	src, plugin, err := openSimilaritySource(ctx, f, opts.Source, limit)
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
	if plugin == nil && src.Name() == "semantic" && params["model"] == "" {
		if err := embedIfMissing(ctx, f, store, set, "lcl similarity"); err != nil {
			return err
		}
	}
	if !opts.Force {
		hit, err := similarity.Cached(ctx, store, src, set, params)
		if err != nil {
			return err
		}
		if hit != nil {
			m := hit.Matrix
			if !f.Emit("similarity", map[string]any{"label_set": set.Name, "source": src.Name(), "key": hit.Key, "cached": true, "classes": m.N(), "params": hit.Params}) {
				fmt.Fprintf(f.IO.Out, "cache hit: %s matrix of %s (%d×%d) with these inputs is already stored as %s (created %s); --force recomputes\n",
					src.Name(), set.Name, m.N(), m.N(), hit.Key, m.Provenance.CreatedAt.Format("2006-01-02 15:04:05"))
			}
			return nil
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
	if size := similarity.MatrixBytes(res.N()); size >= 1<<30 {
		f.Logf("lcl similarity: storing the %d×%d matrix (%s)", res.N(), res.N(), similarity.GB(size))
	}
	key, err := store.PutMatrix(ctx, res.Record(set, src.Name(), "lcl "+Version))
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
func openSimilaritySource(ctx context.Context, f *Factory, name string, maxMemory int64) (similarity.Source, *plugins.SimilaritySource, error) {
	deps := f.similarityDeps()
	deps.MaxMemory = maxMemory
	if src, err := similarity.Lookup(deps, name); err == nil {
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

// embedIfMissing gives set's classes their vectors when the store holds
// none for set (the semantic source reads them), saying so in one line: from
// the newest corpus model in the store (what lcl embed trained last, any
// settings), else as lcl embed with its defaults (training the WordNet
// corpus model first). The class documents are as lcl embed's --source auto.
func embedIfMissing(ctx context.Context, f *Factory, store *simstore.Store, set *labels.Set, who string) error {
	entries, err := store.List(ctx, simstore.KindVectors)
	if err != nil {
		return err
	}
	prefix := "vec/" + url.PathEscape(set.Name) + "/"
	for _, e := range entries {
		if strings.HasPrefix(e.Key, prefix) {
			return nil
		}
	}
	latest, err := store.LatestModel(ctx)
	if errors.Is(err, simstore.ErrNotFound) {
		f.Logf("%s: no vectors of %s in the store: embedding its classes first (lcl embed --synsets %s, training the corpus model once)", who, set.Name, set.Name)
		_, err = embedSet(ctx, f, set, defaultEmbedFlags(set.Name))
		return err
	}
	if err != nil {
		return err
	}
	docs, source, err := classvec.Documents(ctx, set, "auto",
		func() (classvec.ArticleStore, error) { return store, nil }, f.WordNet)
	if err != nil {
		return err
	}
	cm, err := classvec.LoadCorpusModel(ctx, store, latest.ID)
	if err != nil {
		return err
	}
	v, err := cm.Vectors(docs, embed.InferOptions{Seed: cm.Options.Seed})
	if err != nil {
		return err
	}
	out := v.Record(set, source)
	f.Logf("%s: no vectors of %s in the store: embedded its classes with the stored corpus model as vec/%s/%s", who, set.Name, set.Name, out.Model)
	return store.PutVectors(ctx, out)
}
