package cli

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/classvec"
	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/trainer"
)

type embedFlags struct {
	synsets, source           string
	corpus, model, vectors    string
	saveModel, export         string
	mode                      string
	words, shared             bool
	dim, window, negative     int
	minCount, epochs, workers int
	sample, alpha, minAlpha   float64
	seed                      uint64
	inferEpochs               int
}

// defaultEmbedFlags are lcl embed's flags as given no value.
func defaultEmbedFlags(synsets string) *embedFlags {
	d := embed.DefaultOptions()
	return &embedFlags{synsets: synsets, source: "auto", mode: string(d.Mode), words: d.DBOWWords, shared: d.SharedNegatives,
		dim: d.Dim, window: d.Window, negative: d.Negative, minCount: d.MinCount, epochs: d.Epochs,
		workers: runtime.GOMAXPROCS(0), sample: d.Sample, alpha: d.Alpha, minAlpha: d.MinAlpha, seed: d.Seed}
}

func newEmbedCmd(f *Factory) *cobra.Command {
	d := defaultEmbedFlags("")
	fl := &embedFlags{}
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Embed class documents with doc2vec",
		Long: `embed gives every class of a label set a document vector and stores the
vectors in the store (vec/SET/MODEL), where "lcl similarity" finds them.

Class documents (--source): "wordnet" uses each class's WordNet synset
(lemmas, definition, examples); "api", "dump" or "dump:PATH" use the articles
"lcl wiki" fetched into the store from that source; "auto" (default) uses the
stored articles when the label set has any, else WordNet.

Vectors come from one of:
  (default)      the corpus model: doc2vec trained on one document per WordNet
                 noun synset (82,115 documents, ~1.3 M tokens), so it works
                 offline, once: it is kept in the store (model/ID) and every
                 later lcl embed with the same corpus and settings reuses it,
                 for any label set. Classes whose document is in the corpus
                 (WordNet glosses) use their trained vector, the others
                 (articles) a vector inferred against the model;
  --corpus FILE  the same with a corpus model trained on FILE (one document
                 per line, optionally "TAG<TAB>text");
  --model FILE   a model saved with --save-model: trained vectors for documents
                 it was trained on, inferred vectors (frozen weights) otherwise;
  --vectors FILE a word2vec text or binary file (e.g. gensim's
                 save_word2vec_format): a key equal to the class id, its wnid or
                 "ENTITY/Article_title" is used as is, otherwise the class vector
                 is the mean of the vectors of its document's words.

The defaults are the settings that measured best against WordNet Wu-Palmer
similarity on ImageNet-1k (docs/embed.md): PV-DBOW with skip-gram word
training, d=100, window 5, 5 negatives, min count 2, sample 1e-3, 15 epochs.
One worker and a fixed --seed give bit-identical vectors; several workers
share the weights without locks (Hogwild) and differ by the last bits from
run to run. The store key names the corpus model (every setting, the seed
and a digest of the corpus, docs-HASH) and, for inferred vectors, the
inference settings and a digest of the class documents. Ctrl-C stops
training cleanly; nothing is stored then.`,
		Example: `  lcl embed --synsets imagenet
  lcl embed --synsets cifar100 --source api --epochs 40
  lcl embed --synsets imagenet --workers 1 --seed 7 --save-model imagenet.d2v
  lcl embed --synsets imagenet --model imagenet.d2v
  lcl embed --synsets imagenet --vectors enwiki_20180420_100d.txt`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEmbed(cmd.Context(), f, fl) },
	}
	p := cmd.Flags()
	p.StringVar(&fl.synsets, "synsets", "", "label set: built-in name or file of wnids (required)")
	p.StringVar(&fl.source, "source", d.source, "class documents: auto, wordnet, api, dump or dump:PATH")
	p.StringVar(&fl.corpus, "corpus", "", "train on this corpus file instead of the WordNet noun corpus")
	p.StringVar(&fl.model, "model", "", "use this saved model instead of training")
	p.StringVar(&fl.vectors, "vectors", "", "use this word2vec vector file instead of training")
	p.StringVar(&fl.saveModel, "save-model", "", "also save the corpus model to this file")
	p.StringVar(&fl.export, "export", "", "also write the class vectors to this word2vec file (binary if it ends in .bin, else text)")
	p.StringVar(&fl.mode, "mode", d.mode, "doc2vec architecture: dbow or dm")
	p.BoolVar(&fl.words, "dbow-words", d.words, "in dbow mode, train word vectors by skip-gram too")
	p.BoolVar(&fl.shared, "shared-negatives", d.shared, "with --dbow-words: a centre word's context words share one draw of noise words")
	p.IntVar(&fl.dim, "dim", d.dim, "vector size")
	p.IntVar(&fl.window, "window", d.window, "context window")
	p.IntVar(&fl.negative, "negative", d.negative, "negative samples per word")
	p.IntVar(&fl.minCount, "min-count", d.minCount, "drop words rarer than this")
	p.Float64Var(&fl.sample, "sample", d.sample, "frequent-word down-sampling threshold (0 = off)")
	p.IntVar(&fl.epochs, "epochs", d.epochs, "training epochs")
	p.Float64Var(&fl.alpha, "alpha", d.alpha, "initial learning rate")
	p.Float64Var(&fl.minAlpha, "min-alpha", d.minAlpha, "final learning rate")
	p.IntVar(&fl.workers, "workers", d.workers, "training goroutines (1 = deterministic)")
	p.Uint64Var(&fl.seed, "seed", d.seed, "random seed")
	p.IntVar(&fl.inferEpochs, "infer-epochs", 0, "epochs for inferring vectors of documents not in the corpus (0 = training epochs)")
	return cmd
}

func runEmbed(ctx context.Context, f *Factory, fl *embedFlags) error {
	set, err := f.LabelSet(fl.synsets)
	if err != nil {
		return err
	}
	r, err := embedSet(ctx, f, set, fl)
	if err != nil {
		return err
	}
	out, stats, cm := r.out, r.v.Stats, r.cm
	res := map[string]any{"label_set": set.Name, "model": out.Model, "classes": len(out.IDs), "dim": out.Dim, "source": r.source}
	if stats != nil {
		res["effective_words"], res["seconds"], res["words_per_s"] = stats.EffectiveWords, stats.Elapsed.Seconds(), stats.EffectiveWordsPerSecond()
	}
	if cm != nil {
		res["corpus_model"], res["corpus_model_trained"], res["inferred"] = "model/"+cm.ID, cm.Trained, out.Meta["inferred"]
	}
	if f.Emit("embed", res) {
		return nil
	}
	if !f.Quiet {
		if cm != nil && stats != nil {
			fmt.Fprintf(f.IO.Out, "trained the corpus model on %d effective words in %s (%.0f words/s), stored as model/%s\n",
				stats.EffectiveWords, stats.Elapsed.Round(time.Millisecond), stats.EffectiveWordsPerSecond(), cm.ID)
		} else if cm != nil {
			fmt.Fprintf(f.IO.Out, "reused the corpus model model/%s (no training)\n", cm.ID)
		}
		if n := out.Meta["inferred"]; cm != nil && n != "0" {
			fmt.Fprintf(f.IO.Out, "inferred the vectors of %s class documents not in the corpus\n", n)
		}
		fmt.Fprintf(f.IO.Out, "stored %d vectors (d=%d) as vec/%s/%s\n", len(out.IDs), out.Dim, set.Name, out.Model)
	}
	return nil
}

// embedded is what embedSet stored and how it got it.
type embedded struct {
	out    simstore.Vectors
	v      *classvec.Vectors
	cm     *classvec.CorpusModel // the corpus model, when the vectors came from one
	source string                // where the class documents came from
}

// embedSet gives set's classes their vectors as fl says and stores them.
func embedSet(ctx context.Context, f *Factory, set *labels.Set, fl *embedFlags) (*embedded, error) {
	opts, err := fl.options()
	if err != nil {
		return nil, err
	}
	if !classvec.IsDocSource(fl.source) {
		return nil, usagef("--source %q: want auto, wordnet, api, dump or dump:PATH%s", fl.source,
			suggest.DidYouMean(fl.source, []string{"auto", "wordnet", "api", "dump"}))
	}
	docs, source, err := classvec.Documents(ctx, set, fl.source,
		func() (classvec.ArticleStore, error) { s, err := f.Store(); return s, err }, f.WordNet)
	if err != nil {
		return nil, err
	}
	r := &embedded{source: source}
	switch {
	case fl.vectors != "":
		r.v, err = classvec.FromWord2Vec(fl.vectors, docs)
	case fl.model != "":
		r.v, err = classvec.FromModel(fl.model, docs, embed.InferOptions{Epochs: fl.inferEpochs, Seed: fl.seed})
	default:
		r.v, r.cm, err = trainClassVectors(ctx, f, fl, opts, docs)
	}
	if err != nil {
		return nil, err
	}
	r.out = r.v.Record(set, source)
	s, err := f.Store()
	if err != nil {
		return nil, err
	}
	if err := s.PutVectors(ctx, r.out); err != nil {
		return nil, err
	}
	if fl.export != "" {
		ev := &embed.Vectors{Keys: r.out.IDs, Dim: r.out.Dim, Data: r.out.Data}
		if err := embed.SaveWord2Vec(fl.export, ev, strings.HasSuffix(fl.export, ".bin")); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (fl *embedFlags) options() (embed.Options, error) {
	o := embed.DefaultOptions()
	o.Mode, o.DBOWWords, o.SharedNegatives = embed.Mode(fl.mode), fl.words, fl.shared
	o.Dim, o.Window, o.Negative, o.MinCount = fl.dim, fl.window, fl.negative, fl.minCount
	o.Sample, o.Epochs, o.Alpha, o.MinAlpha = fl.sample, fl.epochs, fl.alpha, fl.minAlpha
	o.Workers, o.Seed = fl.workers, fl.seed
	if o.Mode != embed.DBOW && o.Mode != embed.DM {
		return o, usagef("--mode %q: want dbow or dm%s", fl.mode, suggest.DidYouMean(fl.mode, []string{"dbow", "dm"}))
	}
	// The settings' ranges, checked here to name the flags (embed's own
	// check names the fields).
	switch {
	case o.Dim < 1 || o.Dim > embed.MaxDim:
		return o, usagef("--dim %d: want 1 to %d", o.Dim, embed.MaxDim)
	case o.Epochs < 1 || o.Epochs > trainer.MaxEpochs:
		return o, usagef("--epochs %d: want a whole number from 1 to %d", o.Epochs, trainer.MaxEpochs)
	case o.Window < 1 || o.Window > embed.MaxWindow:
		return o, usagef("--window %d: want a whole number from 1 to %d", o.Window, embed.MaxWindow)
	case o.Negative < 1 || o.Negative > embed.MaxNegative:
		return o, usagef("--negative %d: want a whole number from 1 to %d (only negative sampling is implemented)", o.Negative, embed.MaxNegative)
	case fl.inferEpochs < 0 || fl.inferEpochs > trainer.MaxEpochs:
		return o, usagef("--infer-epochs %d: want a whole number from 0 to %d (0: the training epochs)", fl.inferEpochs, trainer.MaxEpochs)
	case o.MinCount < 0:
		return o, usagef("--min-count %d: want ≥ 0", o.MinCount)
	case !(o.Sample >= 0) || math.IsInf(o.Sample, 1):
		return o, usagef("--sample %g: want a finite value ≥ 0 (0: no down-sampling)", o.Sample)
	case !(o.Alpha > 0) || math.IsInf(o.Alpha, 1):
		return o, usagef("--alpha %g: want a finite value > 0", o.Alpha)
	case !(o.MinAlpha >= 0 && o.MinAlpha <= o.Alpha):
		return o, usagef("--min-alpha %g: want 0 ≤ min alpha ≤ --alpha (%g)", o.MinAlpha, o.Alpha)
	}
	if o.Workers < 1 || o.Workers > experiment.MaxProcs {
		// (one goroutine each: lcl train's bound on its --workers)
		return o, usagef("--workers %d: want 1 to %d", fl.workers, experiment.MaxProcs)
	}
	n := 0
	for _, s := range []string{fl.corpus, fl.model, fl.vectors} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return o, usagef("--corpus, --model and --vectors exclude each other: give at most one")
	}
	if fl.model != "" || fl.vectors != "" {
		if fl.saveModel != "" {
			return o, usagef("--save-model saves a model trained here: not with --model or --vectors")
		}
	}
	if fl.inferEpochs < 0 {
		return o, usagef("--infer-epochs %d: want ≥ 0", fl.inferEpochs)
	}
	return o, nil
}

// trainClassVectors gives the classes their vectors from the corpus model
// (--corpus, else WordNet's nouns) kept in the store: trained once, with a
// progress bar, then reused by every label set. Classes whose document is in
// the corpus take their trained vector, the others an inferred one.
func trainClassVectors(ctx context.Context, f *Factory, fl *embedFlags, o embed.Options, docs []classvec.Doc) (*classvec.Vectors, *classvec.CorpusModel, error) {
	corpus, err := classvec.OpenCorpus(fl.corpus, f.WordNet)
	if err != nil {
		return nil, nil, err
	}
	store, err := f.Store()
	if err != nil {
		return nil, nil, err
	}
	var bar interface {
		Set64(int64) error
		Describe(string)
		Finish() error
	}
	o.Progress = func(p embed.Progress) {
		if bar == nil {
			bar = f.Progress(p.TotalWords, "embed")
		}
		wps := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			wps = float64(p.EffectiveWords) / s
		}
		bar.Describe(fmt.Sprintf("embed: corpus model, epoch %d/%d, %.0fk words/s", p.Epoch, o.Epochs, wps/1000))
		bar.Set64(p.Words)
	}
	cm, err := classvec.LoadOrTrainCorpusModel(ctx, store, corpus, o)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, nil, err
	}
	if fl.saveModel != "" {
		if err := cm.Save(fl.saveModel); err != nil {
			return nil, nil, err
		}
	}
	v, err := cm.Vectors(docs, embed.InferOptions{Epochs: fl.inferEpochs, Seed: fl.seed})
	return v, cm, err
}
