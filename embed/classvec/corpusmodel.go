package classvec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/lcl-project/lcl/embed"
	"github.com/lcl-project/lcl/simstore"
)

// ModelStore keeps trained corpus models between runs (*simstore.Store).
type ModelStore interface {
	GetModel(ctx context.Context, id string) (*simstore.Model, error)
	PutModel(ctx context.Context, m simstore.Model) error
}

// CorpusModel is doc2vec trained on a corpus alone, kept in the store so
// that every label set embeds against the same model instead of training
// again: classes whose document is in the corpus (WordNet glosses in the
// WordNet corpus) take their trained vector, the others an inferred one.
type CorpusModel struct {
	*embed.Model
	// ID names every input of the model: the settings and seed
	// (ModelID), the corpus's name and the digest of its documents.
	ID string
	// Trained is true when this run trained the model (it was not stored);
	// Stats then has the training statistics.
	Trained bool
	Stats   *embed.Stats
	Meta    map[string]string // facts stored with it: corpus, vocabulary, documents
}

// CorpusModelID is the id of the model o trains on corpus: its settings and
// seed, the corpus's name and the first 12 hex digits of the digest of its
// documents (DocumentsDigest). The class vectors of documents in the corpus
// are stored under this id, exactly as when the corpus and those documents
// were trained together (the document set is the same).
func CorpusModelID(corpus Corpus, o embed.Options) string {
	return ModelID(o) + "-" + corpus.Name + "-docs-" + DocumentsDigest(corpus.Docs)[:12]
}

// LoadOrTrainCorpusModel returns the model of corpus and o from the store,
// or trains it (reporting through o.Progress) and stores it before
// returning. An interrupted training stores nothing; the next run trains
// again from the start.
func LoadOrTrainCorpusModel(ctx context.Context, store ModelStore, corpus Corpus, o embed.Options) (*CorpusModel, error) {
	id := CorpusModelID(corpus, o)
	cm, err := LoadCorpusModel(ctx, store, id)
	if !errors.Is(err, simstore.ErrNotFound) {
		return cm, err
	}
	m, st, err := embed.Train(ctx, corpus.Docs, o)
	if err != nil {
		return &CorpusModel{Stats: &st}, err
	}
	cm = &CorpusModel{Model: m, ID: id, Trained: true, Stats: &st, Meta: map[string]string{
		"corpus": corpus.About, "vocabulary": strconv.Itoa(m.Vocab.Len()), "documents": strconv.Itoa(len(m.Tags)),
		"documents_sha256": DocumentsDigest(corpus.Docs), "workers": strconv.Itoa(workers(o)), "reproducible": reproducible(o)}}
	rec, err := modelRecord(id, m, cm.Meta)
	if err != nil {
		return nil, err
	}
	if err := store.PutModel(ctx, *rec); err != nil {
		return nil, fmt.Errorf("storing the corpus model: %w", err)
	}
	return cm, nil
}

// LoadCorpusModel reads the corpus model stored under id (an error wrapping
// simstore.ErrNotFound when there is none).
func LoadCorpusModel(ctx context.Context, store ModelStore, id string) (*CorpusModel, error) {
	rec, err := store.GetModel(ctx, id)
	if err != nil {
		return nil, err
	}
	m, err := modelFromRecord(rec)
	if err != nil {
		return nil, fmt.Errorf("stored corpus model %s: %w (lcl store rm model/%s trains it again)", id, err, id)
	}
	return &CorpusModel{Model: m, ID: id, Meta: rec.Meta}, nil
}

// modelHeader is what a stored model keeps besides its matrices (word
// vectors, output weights, document vectors: the record's three parts).
type modelHeader struct {
	Options embed.Options `json:"options"`
	Words   []string      `json:"words"`
	Counts  []int64       `json:"counts"`
	Tags    []string      `json:"tags"`
}

func modelRecord(id string, m *embed.Model, meta map[string]string) (*simstore.Model, error) {
	o := m.Options
	o.Progress = nil
	hdr, err := json.Marshal(modelHeader{Options: o, Words: m.Vocab.Words, Counts: m.Vocab.Counts, Tags: m.Tags})
	if err != nil {
		return nil, err
	}
	data := make([]float32, 0, len(m.WordVecs)+len(m.OutVecs)+len(m.DocVecs))
	data = append(append(append(data, m.WordVecs...), m.OutVecs...), m.DocVecs...)
	return &simstore.Model{ID: id, Meta: meta, Header: hdr, Parts: []int{len(m.WordVecs), len(m.OutVecs), len(m.DocVecs)}, Data: data}, nil
}

func modelFromRecord(r *simstore.Model) (*embed.Model, error) {
	var h modelHeader
	if err := json.Unmarshal(r.Header, &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if len(r.Parts) != 3 {
		return nil, fmt.Errorf("%d parts, want 3 (word vectors, output weights, document vectors)", len(r.Parts))
	}
	out := r.Part(1)
	if len(out) == 0 {
		out = nil
	}
	return embed.Assemble(h.Options, h.Words, h.Counts, h.Tags, r.Part(0), out, r.Part(2))
}

// Vectors gives the classes their vectors from the corpus model: the
// trained vector of a document in the corpus (its tag: the wnid for WordNet
// documents), an inferred one for the others (articles, tagged class:ID):
// word vectors and output weights frozen, see embed.Model.Infer. The model
// id names the corpus model; inferred vectors add the inference settings
// and the digest of the class documents.
func (cm *CorpusModel) Vectors(docs []Doc, infer embed.InferOptions) (*Vectors, error) {
	v := &Vectors{Data: make([][]float32, len(docs)), Model: cm.ID}
	if cm.Trained {
		v.Stats = cm.Stats
	}
	inferred := 0
	for i, d := range docs {
		vec, ok := cm.DocVector(d.Tag)
		if ok {
			v.Data[i] = append([]float32(nil), vec...)
			continue
		}
		var err error
		if v.Data[i], err = cm.Infer(embed.Tokenize(d.Text), infer); err != nil {
			return nil, fmt.Errorf("class %s: %w", d.Class.ID, err)
		}
		inferred++
	}
	if inferred > 0 {
		e := infer.Epochs
		if e == 0 {
			e = cm.Options.Epochs
		}
		v.Model += fmt.Sprintf("-infer-e%d-seed%d-docs-%s", e, infer.Seed, classDigest(docs))
	}
	v.Meta = map[string]string{"corpus_model": "model/" + cm.ID, "inferred": strconv.Itoa(inferred)}
	for _, k := range []string{"corpus", "vocabulary", "documents", "documents_sha256", "workers", "reproducible"} {
		if x, ok := cm.Meta[k]; ok {
			v.Meta[k] = x
		}
	}
	return v, nil
}
