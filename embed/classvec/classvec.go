// Package classvec gives every class of a label set a vector: the class's
// document (its WordNet synset, or the article lcl wiki stored), and a
// vector from doc2vec trained on a corpus plus the class documents, from a
// saved doc2vec model (trained or inferred), or from a word2vec file (a key,
// else the mean of its document's word vectors). Each way names the vectors
// by every setting that changes them: the model id of their store key.
package classvec

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/embed/wncorpus"
	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// Doc is the document of one class.
type Doc struct {
	Class labels.Class
	Tag   string // document tag in the corpus: the wnid, or "class:ID" for articles
	Title string // article title, "" for WordNet documents
	Text  string
}

// WordNetDocs are the classes' WordNet documents (lemmas, definition,
// examples: the corpus's own documents of their synsets).
func WordNetDocs(wn *wordnet.DB, set *labels.Set) ([]Doc, error) {
	docs := make([]Doc, len(set.Classes))
	for i, c := range set.Classes {
		if c.WNID == "" {
			return nil, fmt.Errorf("class %d (%s) of %s has no WordNet synset: use --source api or dump after lcl wiki", c.Index, c.ID, set.Name)
		}
		s, err := wn.Synset(c.WNID)
		if err != nil {
			return nil, fmt.Errorf("class %d (%s): %w", c.Index, c.ID, err)
		}
		docs[i] = Doc{Class: c, Tag: c.WNID, Text: wncorpus.SynsetText(wn, s)}
	}
	return docs, nil
}

// ArticleDocs are the classes' stored articles from source ("" for any; a
// dump's articles match "dump" and "dump:PATH"). Every class needs one. It
// returns the source the documents came from ("mixed" for several).
func ArticleDocs(set *labels.Set, arts []simstore.Article, source string) ([]Doc, string, error) {
	byID := map[string]simstore.Article{}
	sources := map[string]bool{}
	for _, a := range arts {
		if source == "" || a.Source == source || source == "dump" && strings.HasPrefix(a.Source, "dump") ||
			strings.HasPrefix(source, "dump:") && a.Source == "dump" {
			byID[a.ClassID] = a
			sources[a.Source] = true
		}
	}
	docs := make([]Doc, len(set.Classes))
	var missing []string
	for i, c := range set.Classes {
		a, ok := byID[c.ID]
		if !ok {
			missing = append(missing, c.ID)
			continue
		}
		docs[i] = Doc{Class: c, Tag: "class:" + c.ID, Title: a.Title, Text: a.Text}
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

// Vectors are the class vectors, in class order, and what made them.
type Vectors struct {
	Data  [][]float32
	Model string            // the model id: every setting that changes the vectors
	Meta  map[string]string // facts stored with them (corpus, vocabulary, files)
	Stats *embed.Stats      // training statistics; nil when nothing was trained
}

// Corpus is what doc2vec trains on besides the class documents.
type Corpus struct {
	Docs []embed.Document
	// Name goes into the model id; About into the stored facts.
	Name, About string
}

// Train trains doc2vec on the corpus plus the class documents it lacks
// (articles) and returns the classes' trained vectors. saveModel, if set,
// also saves the model.
func Train(ctx context.Context, corpus Corpus, docs []Doc, o embed.Options, saveModel string) (*Vectors, error) {
	all := corpus.Docs
	have := make(map[string]bool, len(all))
	for _, d := range all {
		have[d.Tag] = true
	}
	for _, d := range docs {
		if !have[d.Tag] {
			all = append(all, embed.Document{Tag: d.Tag, Words: embed.Tokenize(d.Text)})
			have[d.Tag] = true
		}
	}
	m, st, err := embed.Train(ctx, all, o)
	if err != nil {
		return &Vectors{Stats: &st}, err
	}
	if saveModel != "" {
		if err := m.Save(saveModel); err != nil {
			return nil, err
		}
	}
	// The key names the document set trained on, not only the corpus: the
	// same corpus with other class documents (WordNet's own synset
	// documents, or stored articles under their class: tags) trains other
	// vectors.
	sum := DocumentsDigest(all)
	v := &Vectors{Data: make([][]float32, len(docs)), Model: ModelID(o) + "-" + corpus.Name + "-docs-" + sum[:12], Stats: &st,
		Meta: map[string]string{"corpus": corpus.About, "vocabulary": strconv.Itoa(m.Vocab.Len()), "documents": strconv.Itoa(len(m.Tags)),
			"documents_sha256": sum, "workers": strconv.Itoa(workers(o)), "reproducible": reproducible(o)}}
	for i, d := range docs {
		vec, ok := m.DocVector(d.Tag)
		if !ok {
			return nil, fmt.Errorf("internal: class %s has no trained vector", d.Class.ID)
		}
		v.Data[i] = append([]float32(nil), vec...)
	}
	return v, nil
}

// DocumentsDigest is the hex SHA-256 of a document set: every document's
// tag and tokens, in order, each length-prefixed so that no two different
// sets concatenate to the same bytes.
func DocumentsDigest(docs []embed.Document) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	put := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		io.WriteString(h, s)
	}
	for _, d := range docs {
		put(d.Tag)
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(d.Words)))])
		for _, w := range d.Words {
			put(w)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// classDigest is DocumentsDigest of the class documents (title and text
// tokens): what inferred and word-averaged vectors depend on.
func classDigest(docs []Doc) string {
	ds := make([]embed.Document, len(docs))
	for i, d := range docs {
		ds[i] = embed.Document{Tag: d.Tag + "\x00" + d.Title, Words: embed.Tokenize(d.Text)}
	}
	return DocumentsDigest(ds)[:12]
}

// workers is the number of training goroutines o asks for.
func workers(o embed.Options) int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// reproducible says whether training with o repeats bit for bit: with one
// worker it does (the same seed, settings and documents give the same
// vectors); with several the workers update the shared weights without
// locks (Hogwild), so the order of their updates, and the last bits of
// the vectors, depend on scheduling. Every job's random stream and
// learning rate are fixed by its place in the corpus, so two such runs
// differ only by those races.
func reproducible(o embed.Options) string {
	if workers(o) == 1 {
		return "bit-identical (1 worker)"
	}
	return "no: several workers (Hogwild); use --workers 1"
}

// ModelID names a trained model by every setting that changes its vectors.
func ModelID(o embed.Options) string {
	mode := string(o.Mode)
	if o.Mode == embed.DBOW && o.DBOWWords {
		mode += "+words"
		if o.SharedNegatives {
			mode += "+shared" // another training step: other vectors
		}
	}
	return fmt.Sprintf("doc2vec-%s-d%d-w%d-n%d-mc%d-s%g-a%g-%g-e%d-seed%d",
		mode, o.Dim, o.Window, o.Negative, o.MinCount, o.Sample, o.Alpha, o.MinAlpha, o.Epochs, o.Seed)
}

// ReadCorpus reads a corpus file: one document per line, "TAG<TAB>text" or
// just text (tagged line:N). Its name is "corpus-" and 12 hex digits of the
// file's SHA-256.
func ReadCorpus(path string) (Corpus, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Corpus{}, err
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
		return Corpus{}, fmt.Errorf("%s: line %d: %w", path, len(docs)+1, err)
	}
	if len(docs) == 0 {
		return Corpus{}, fmt.Errorf("%s: empty corpus", path)
	}
	return Corpus{Docs: docs, Name: "corpus-" + hex.EncodeToString(h.Sum(nil))[:12], About: path}, nil
}

// WordNetCorpus is one document per WordNet noun synset.
func WordNetCorpus(wn *wordnet.DB) Corpus {
	return Corpus{Docs: wncorpus.Documents(wn), Name: "wordnet-nouns", About: "wordnet noun synsets (lemmas, definition, examples)"}
}

// FromModel takes the vectors from a saved model: trained vectors of the
// documents it was trained on, vectors inferred with frozen weights for the
// others.
func FromModel(path string, docs []Doc, infer embed.InferOptions) (*Vectors, error) {
	m, err := embed.Load(path)
	if err != nil {
		return nil, err
	}
	d, err := digest.File(path)
	if err != nil {
		return nil, err
	}
	sum := d[:12]
	v := &Vectors{Data: make([][]float32, len(docs))}
	inferred := 0
	for i, d := range docs {
		if _, ok := m.DocVector(d.Tag); !ok {
			inferred++
		}
		if v.Data[i], err = m.Vector(d.Tag, embed.Tokenize(d.Text), infer); err != nil {
			return nil, fmt.Errorf("class %s: %w", d.Class.ID, err)
		}
	}
	v.Meta = map[string]string{"model_file": path, "inferred": strconv.Itoa(inferred)}
	v.Model = ModelID(m.Options) + "-model-" + sum
	if inferred > 0 {
		// Inferred vectors depend on the class documents' text.
		v.Model += fmt.Sprintf("-infer-e%d-seed%d-docs-%s", infer.Epochs, infer.Seed, classDigest(docs))
	}
	return v, nil
}

// FromWord2Vec takes the vectors from a word2vec file: a key equal to the
// class id, its wnid or "ENTITY/Article_title" is used as is; otherwise the
// mean of the vectors of the document's words.
func FromWord2Vec(path string, docs []Doc) (*Vectors, error) {
	w, _, err := embed.LoadWord2Vec(path)
	if err != nil {
		return nil, err
	}
	d, err := digest.File(path)
	if err != nil {
		return nil, err
	}
	sum := d[:12]
	m := embed.FromWordVectors(w)
	key := make(map[string]int, len(w.Keys))
	for i, k := range w.Keys {
		key[k] = i
	}
	v := &Vectors{Data: make([][]float32, len(docs))}
	var empty []string
	direct := 0
	for i, d := range docs {
		cands := []string{d.Class.ID, d.Class.WNID}
		for _, t := range strings.Split(d.Title, " | ") {
			if t != "" {
				cands = append(cands, "ENTITY/"+strings.ReplaceAll(t, " ", "_"))
			}
		}
		found := false
		for _, c := range cands {
			if j, ok := key[c]; ok && c != "" {
				v.Data[i], found = append([]float32(nil), w.Row(j)...), true
				direct++
				break
			}
		}
		if found {
			continue
		}
		var n int
		if v.Data[i], n = m.MeanWordVector(embed.Tokenize(d.Text)); n == 0 {
			empty = append(empty, d.Class.ID)
		}
	}
	if len(empty) > 0 {
		return nil, fmt.Errorf("%s: %d classes have no key and no word of their document in the file (first: %s)",
			path, len(empty), strings.Join(empty[:min(5, len(empty))], ", "))
	}
	v.Meta = map[string]string{"vectors_file": path, "direct_keys": strconv.Itoa(direct)}
	v.Model = fmt.Sprintf("w2v-%s-d%d-mean-docs-%s", sum, w.Dim, classDigest(docs))
	return v, nil
}
