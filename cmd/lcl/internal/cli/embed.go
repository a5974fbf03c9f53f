package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/wncorpus"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
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
training, d=100, window 5, 5 negatives, min count 2, sample 1e-3, 20 epochs.
One worker and a fixed --seed give bit-identical vectors. Ctrl-C stops
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

// classDoc is the document of one class.
type classDoc struct {
	class labels.Class
	tag   string // document tag in the corpus: the wnid, or "class:ID" for articles
	title string // article title, "" for WordNet documents
	text  string
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
	docs, source, err := classDocuments(ctx, f, set, fl.source)
	if err != nil {
		return err
	}
	var (
		vecs  [][]float32
		model string
		meta  = map[string]string{"source": source}
		stats *embed.Stats
	)
	switch {
	case fl.vectors != "":
		vecs, model, err = vectorsFromWord2Vec(fl.vectors, docs, meta)
	case fl.model != "":
		vecs, model, err = vectorsFromModel(fl.model, docs, fl.inferEpochs, fl.seed, meta)
	default:
		var st embed.Stats
		vecs, model, st, err = vectorsFromTraining(ctx, f, fl, opts, docs, meta)
		stats = &st
	}
	if err != nil {
		return err
	}
	model += "-src-" + strings.NewReplacer(":", "-", "/", "-").Replace(source)
	out := simstore.Vectors{LabelSet: set.Name, Model: model, Dim: len(vecs[0]), Meta: meta}
	for i, c := range set.Classes {
		out.IDs = append(out.IDs, c.ID)
		out.Data = append(out.Data, vecs[i]...)
	}
	s, err := f.Store()
	if err != nil {
		return err
	}
	if err := s.PutVectors(ctx, out); err != nil {
		return err
	}
	if fl.export != "" {
		v := &embed.Vectors{Keys: out.IDs, Dim: out.Dim, Data: out.Data}
		if err := embed.SaveWord2Vec(fl.export, v, strings.HasSuffix(fl.export, ".bin")); err != nil {
			return err
		}
	}
	res := map[string]any{"label_set": set.Name, "model": model, "classes": len(out.IDs), "dim": out.Dim, "source": source}
	if stats != nil {
		res["effective_words"], res["seconds"], res["words_per_s"] = stats.EffectiveWords, stats.Elapsed.Seconds(), stats.EffectiveWordsPerSecond()
	}
	if f.Emit("embed", res) {
		return nil
	}
	if !f.Quiet {
		fmt.Fprintf(f.IO.Out, "stored %d vectors (d=%d) as vec/%s/%s\n", len(out.IDs), out.Dim, set.Name, model)
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

// classDocuments returns the document of every class, in class order, and
// the source they came from.
func classDocuments(ctx context.Context, f *Factory, set *labels.Set, source string) ([]classDoc, string, error) {
	switch {
	case source == "auto":
		s, err := f.Store()
		if err != nil {
			return nil, "", err
		}
		arts, err := s.ListArticles(ctx, set.Name)
		if err != nil {
			return nil, "", err
		}
		if len(arts) > 0 {
			return articleDocuments(set, arts, "")
		}
		return wordnetDocuments(f, set)
	case source == "wordnet":
		return wordnetDocuments(f, set)
	case source == "api" || source == "dump" || strings.HasPrefix(source, "dump:"):
		s, err := f.Store()
		if err != nil {
			return nil, "", err
		}
		arts, err := s.ListArticles(ctx, set.Name)
		if err != nil {
			return nil, "", err
		}
		return articleDocuments(set, arts, source)
	}
	return nil, "", usagef("--source %q: want auto, wordnet, api, dump or dump:PATH", source)
}

func wordnetDocuments(f *Factory, set *labels.Set) ([]classDoc, string, error) {
	wn, err := f.WordNet()
	if err != nil {
		return nil, "", err
	}
	docs := make([]classDoc, len(set.Classes))
	for i, c := range set.Classes {
		if c.WNID == "" {
			return nil, "", fmt.Errorf("class %d (%s) of %s has no WordNet synset: use --source api or dump after lcl wiki", c.Index, c.ID, set.Name)
		}
		s, err := wn.Synset(c.WNID)
		if err != nil {
			return nil, "", fmt.Errorf("class %d (%s): %w", c.Index, c.ID, err)
		}
		docs[i] = classDoc{class: c, tag: c.WNID, text: wncorpus.SynsetText(wn, s)}
	}
	return docs, "wordnet", nil
}

func articleDocuments(set *labels.Set, arts []simstore.Article, source string) ([]classDoc, string, error) {
	byID := map[string]simstore.Article{}
	sources := map[string]bool{}
	for _, a := range arts {
		if source == "" || a.Source == source || source == "dump" && strings.HasPrefix(a.Source, "dump") ||
			strings.HasPrefix(source, "dump:") && a.Source == "dump" {
			byID[a.ClassID] = a
			sources[a.Source] = true
		}
	}
	docs := make([]classDoc, len(set.Classes))
	var missing []string
	for i, c := range set.Classes {
		a, ok := byID[c.ID]
		if !ok {
			missing = append(missing, c.ID)
			continue
		}
		docs[i] = classDoc{class: c, tag: "class:" + c.ID, title: a.Title, text: a.Text}
	}
	want := source
	if want == "" {
		want = "any"
	}
	if len(missing) > 0 {
		return nil, "", fmt.Errorf("%d of %d classes of %s have no stored article from source %s (first: %s): run lcl wiki --synsets %s first, or use --source wordnet",
			len(missing), len(set.Classes), set.Name, want, strings.Join(missing[:min(5, len(missing))], ", "), set.Name)
	}
	if source == "" {
		var names []string
		for s := range sources {
			names = append(names, s)
		}
		source = strings.Join(names, "+")
		if len(names) > 1 {
			source = "mixed"
		}
	}
	return docs, source, nil
}

func vectorsFromTraining(ctx context.Context, f *Factory, fl *embedFlags, o embed.Options, docs []classDoc, meta map[string]string) ([][]float32, string, embed.Stats, error) {
	var corpus []embed.Document
	corpusName := "wordnet-nouns"
	if fl.corpus != "" {
		c, digest, err := readCorpusFile(fl.corpus)
		if err != nil {
			return nil, "", embed.Stats{}, err
		}
		corpus, corpusName = c, "corpus-"+digest
		meta["corpus"] = fl.corpus
	} else {
		wn, err := f.WordNet()
		if err != nil {
			return nil, "", embed.Stats{}, err
		}
		corpus = wncorpus.Documents(wn)
		meta["corpus"] = "wordnet noun synsets (lemmas, definition, examples)"
	}
	// Class documents not in the corpus (articles) are trained with it.
	have := make(map[string]bool, len(corpus))
	for _, d := range corpus {
		have[d.Tag] = true
	}
	for _, d := range docs {
		if !have[d.tag] {
			corpus = append(corpus, embed.Document{Tag: d.tag, Words: embed.Tokenize(d.text)})
			have[d.tag] = true
		}
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
	m, st, err := embed.Train(ctx, corpus, o)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return nil, "", st, err
	}
	if fl.saveModel != "" {
		if err := m.Save(fl.saveModel); err != nil {
			return nil, "", st, err
		}
	}
	vecs := make([][]float32, len(docs))
	for i, d := range docs {
		v, ok := m.DocVector(d.tag)
		if !ok {
			return nil, "", st, fmt.Errorf("internal: class %s has no trained vector", d.class.ID)
		}
		vecs[i] = append([]float32(nil), v...)
	}
	meta["vocabulary"] = strconv.Itoa(m.Vocab.Len())
	meta["documents"] = strconv.Itoa(len(m.Tags))
	return vecs, modelID(o) + "-" + corpusName, st, nil
}

// modelID names a trained model by every setting that changes its vectors.
func modelID(o embed.Options) string {
	mode := string(o.Mode)
	if o.Mode == embed.DBOW && o.DBOWWords {
		mode += "+words"
	}
	return fmt.Sprintf("doc2vec-%s-d%d-w%d-n%d-mc%d-s%g-a%g-%g-e%d-seed%d",
		mode, o.Dim, o.Window, o.Negative, o.MinCount, o.Sample, o.Alpha, o.MinAlpha, o.Epochs, o.Seed)
}

func readCorpusFile(path string) ([]embed.Document, string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer fh.Close()
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(fh, h))
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	var docs []embed.Document
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		tag, text, ok := strings.Cut(line, "\t")
		if !ok {
			tag, text = "line:"+strconv.Itoa(n), line
		}
		docs = append(docs, embed.Document{Tag: tag, Words: embed.Tokenize(text)})
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("%s: line %d: %w", path, len(docs)+1, err)
	}
	if len(docs) == 0 {
		return nil, "", fmt.Errorf("%s: empty corpus", path)
	}
	return docs, hex.EncodeToString(h.Sum(nil))[:12], nil
}

func fileDigest(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func vectorsFromModel(path string, docs []classDoc, inferEpochs int, seed uint64, meta map[string]string) ([][]float32, string, error) {
	m, err := embed.Load(path)
	if err != nil {
		return nil, "", err
	}
	digest, err := fileDigest(path)
	if err != nil {
		return nil, "", err
	}
	vecs := make([][]float32, len(docs))
	inferred := 0
	for i, d := range docs {
		if _, ok := m.DocVector(d.tag); !ok {
			inferred++
		}
		if vecs[i], err = m.Vector(d.tag, embed.Tokenize(d.text), embed.InferOptions{Epochs: inferEpochs, Seed: seed}); err != nil {
			return nil, "", fmt.Errorf("class %s: %w", d.class.ID, err)
		}
	}
	meta["model_file"] = path
	meta["inferred"] = strconv.Itoa(inferred)
	id := modelID(m.Options) + "-model-" + digest
	if inferred > 0 {
		id += fmt.Sprintf("-infer-e%d-seed%d", inferEpochs, seed)
	}
	return vecs, id, nil
}

func vectorsFromWord2Vec(path string, docs []classDoc, meta map[string]string) ([][]float32, string, error) {
	v, _, err := embed.LoadWord2Vec(path)
	if err != nil {
		return nil, "", err
	}
	digest, err := fileDigest(path)
	if err != nil {
		return nil, "", err
	}
	m := embed.FromWordVectors(v)
	key := make(map[string]int, len(v.Keys))
	for i, k := range v.Keys {
		key[k] = i
	}
	vecs := make([][]float32, len(docs))
	var empty []string
	direct := 0
	for i, d := range docs {
		cands := []string{d.class.ID, d.class.WNID}
		for _, t := range strings.Split(d.title, " | ") {
			if t != "" {
				cands = append(cands, "ENTITY/"+strings.ReplaceAll(t, " ", "_"))
			}
		}
		found := false
		for _, c := range cands {
			if j, ok := key[c]; ok && c != "" {
				vecs[i], found = append([]float32(nil), v.Row(j)...), true
				direct++
				break
			}
		}
		if found {
			continue
		}
		var n int
		if vecs[i], n = m.MeanWordVector(embed.Tokenize(d.text)); n == 0 {
			empty = append(empty, d.class.ID)
		}
	}
	if len(empty) > 0 {
		return nil, "", fmt.Errorf("%s: %d classes have no key and no word of their document in the file (first: %s)",
			path, len(empty), strings.Join(empty[:min(5, len(empty))], ", "))
	}
	meta["vectors_file"] = path
	meta["direct_keys"] = strconv.Itoa(direct)
	return vecs, fmt.Sprintf("w2v-%s-d%d-mean", digest, v.Dim), nil
}
