package cli

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/classvec"
)

type embedFlags struct {
	synsets, source           string
	corpus, model, vectors    string
	saveModel, export         string
	mode                      string
	words                     bool
	dim, window, negative     int
	minCount, epochs, workers int
	sample, alpha, minAlpha   float64
	seed                      uint64
	inferEpochs               int
}

func newEmbedCmd(f *Factory) *cobra.Command {
	d := embed.DefaultOptions()
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
  (default)      doc2vec trained here on one document per WordNet noun synset
                 (82,115 documents, ~1.3 M tokens) plus the class articles, so
                 it works offline; classes whose document is in the corpus use
                 their trained vector directly;
  --corpus FILE  doc2vec trained on FILE (one document per line, optionally
                 "TAG<TAB>text"), plus the class documents;
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
run to run. The store key names every setting and a digest of the document
set trained on (docs-HASH). Ctrl-C stops training cleanly; nothing is stored
then.`,
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
	p.StringVar(&fl.source, "source", "auto", "class documents: auto, wordnet, api, dump or dump:PATH")
	p.StringVar(&fl.corpus, "corpus", "", "train on this corpus file instead of the WordNet noun corpus")
	p.StringVar(&fl.model, "model", "", "use this saved model instead of training")
	p.StringVar(&fl.vectors, "vectors", "", "use this word2vec vector file instead of training")
	p.StringVar(&fl.saveModel, "save-model", "", "also save the trained model to this file")
	p.StringVar(&fl.export, "export", "", "also write the class vectors to this word2vec file (binary if it ends in .bin, else text)")
	p.StringVar(&fl.mode, "mode", string(d.Mode), "doc2vec architecture: dbow or dm")
	p.BoolVar(&fl.words, "dbow-words", d.DBOWWords, "in dbow mode, train word vectors by skip-gram too")
	p.IntVar(&fl.dim, "dim", d.Dim, "vector size")
	p.IntVar(&fl.window, "window", d.Window, "context window")
	p.IntVar(&fl.negative, "negative", d.Negative, "negative samples per word")
	p.IntVar(&fl.minCount, "min-count", d.MinCount, "drop words rarer than this")
	p.Float64Var(&fl.sample, "sample", d.Sample, "frequent-word down-sampling threshold (0 = off)")
	p.IntVar(&fl.epochs, "epochs", d.Epochs, "training epochs")
	p.Float64Var(&fl.alpha, "alpha", d.Alpha, "initial learning rate")
	p.Float64Var(&fl.minAlpha, "min-alpha", d.MinAlpha, "final learning rate")
	p.IntVar(&fl.workers, "workers", runtime.GOMAXPROCS(0), "training goroutines (1 = deterministic)")
	p.Uint64Var(&fl.seed, "seed", d.Seed, "random seed")
	p.IntVar(&fl.inferEpochs, "infer-epochs", 0, "epochs for inferring vectors of documents not trained on (0 = training epochs)")
	return cmd
}

func runEmbed(ctx context.Context, f *Factory, fl *embedFlags) error {
	set, err := f.LabelSet(fl.synsets)
	if err != nil {
		return err
	}
	opts, err := fl.options()
	if err != nil {
		return err
	}
	if !classvec.IsDocSource(fl.source) {
		return usagef("--source %q: want auto, wordnet, api, dump or dump:PATH", fl.source)
	}
	docs, source, err := classvec.Documents(ctx, set, fl.source,
		func() (classvec.ArticleStore, error) { s, err := f.Store(); return s, err }, f.WordNet)
	if err != nil {
		return err
	}
	var v *classvec.Vectors
	switch {
	case fl.vectors != "":
		v, err = classvec.FromWord2Vec(fl.vectors, docs)
	case fl.model != "":
		v, err = classvec.FromModel(fl.model, docs, embed.InferOptions{Epochs: fl.inferEpochs, Seed: fl.seed})
	default:
		v, err = trainClassVectors(ctx, f, fl, opts, docs)
	}
	if err != nil {
		return err
	}
	out := v.Record(set, source)
	s, err := f.Store()
	if err != nil {
		return err
	}
	if err := s.PutVectors(ctx, out); err != nil {
		return err
	}
	if fl.export != "" {
		ev := &embed.Vectors{Keys: out.IDs, Dim: out.Dim, Data: out.Data}
		if err := embed.SaveWord2Vec(fl.export, ev, strings.HasSuffix(fl.export, ".bin")); err != nil {
			return err
		}
	}
	stats := v.Stats
	res := map[string]any{"label_set": set.Name, "model": out.Model, "classes": len(out.IDs), "dim": out.Dim, "source": source}
	if stats != nil {
		res["effective_words"], res["seconds"], res["words_per_s"] = stats.EffectiveWords, stats.Elapsed.Seconds(), stats.EffectiveWordsPerSecond()
	}
	if f.Emit("embed", res) {
		return nil
	}
	if !f.Quiet {
		fmt.Fprintf(f.IO.Out, "stored %d vectors (d=%d) as vec/%s/%s\n", len(out.IDs), out.Dim, set.Name, out.Model)
		if stats != nil {
			fmt.Fprintf(f.IO.Out, "trained on %d effective words in %s (%.0f words/s)\n",
				stats.EffectiveWords, stats.Elapsed.Round(time.Millisecond), stats.EffectiveWordsPerSecond())
		}
	}
	return nil
}

func (fl *embedFlags) options() (embed.Options, error) {
	o := embed.DefaultOptions()
	o.Mode, o.DBOWWords = embed.Mode(fl.mode), fl.words
	o.Dim, o.Window, o.Negative, o.MinCount = fl.dim, fl.window, fl.negative, fl.minCount
	o.Sample, o.Epochs, o.Alpha, o.MinAlpha = fl.sample, fl.epochs, fl.alpha, fl.minAlpha
	o.Workers, o.Seed = fl.workers, fl.seed
	if o.Mode != embed.DBOW && o.Mode != embed.DM {
		return o, usagef("--mode %q: want dbow or dm", fl.mode)
	}
	if o.Workers < 1 {
		return o, usagef("--workers %d: want ≥ 1", fl.workers)
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

// trainClassVectors trains doc2vec on the corpus (--corpus, else WordNet's
// nouns) plus the class documents, with a progress bar.
func trainClassVectors(ctx context.Context, f *Factory, fl *embedFlags, o embed.Options, docs []classvec.Doc) (*classvec.Vectors, error) {
	corpus, err := classvec.OpenCorpus(fl.corpus, f.WordNet)
	if err != nil {
		return nil, err
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
		bar.Describe(fmt.Sprintf("embed: epoch %d/%d, %.0fk words/s", p.Epoch, o.Epochs, wps/1000))
		bar.Set64(p.Words)
	}
	v, err := classvec.Train(ctx, corpus, docs, o, fl.saveModel)
	if bar != nil {
		bar.Finish()
	}
	return v, err
}
