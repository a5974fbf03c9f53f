package embed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lcl-project/lcl/internal/crash"
)

// Mode selects the doc2vec architecture.
type Mode string

const (
	// DBOW is PV-DBOW: the document vector alone predicts each word of the
	// document (gensim dm=0).
	DBOW Mode = "dbow"
	// DM is PV-DM: the mean of the document vector and the context word
	// vectors predicts the centre word (gensim dm=1, dm_mean=1).
	DM Mode = "dm"
)

// Options are the training settings. The zero value is not useful; start
// from DefaultOptions.
type Options struct {
	Mode Mode `json:"mode"`
	// DBOWWords also trains word vectors by skip-gram in DBOW mode,
	// interleaved with the document training (gensim dbow_words=1).
	DBOWWords bool `json:"dbow_words"`
	// SharedNegatives, with DBOWWords, trains each centre word's context
	// words and the document vector as one batch that shares one draw of
	// noise words (Ji et al. 2016, "Parallelizing Word2Vec in Shared and
	// Distributed Memory"): every output row is read once per centre word
	// instead of once per context word. Plain PV-DBOW and PV-DM ignore it.
	SharedNegatives bool    `json:"shared_negatives,omitempty"`
	Dim             int     `json:"dim"`       // vector size
	Window          int     `json:"window"`    // maximum distance between centre and context word
	Negative        int     `json:"negative"`  // negative samples per positive one
	MinCount        int     `json:"min_count"` // words rarer than this are dropped
	Sample          float64 `json:"sample"`    // frequent-word down-sampling threshold; 0 disables
	Epochs          int     `json:"epochs"`
	Alpha           float64 `json:"alpha"`     // initial learning rate, decaying linearly ...
	MinAlpha        float64 `json:"min_alpha"` // ... to this value at the end of the last epoch
	// Workers is the number of training goroutines, which update the shared
	// weights without locks (Hogwild). 0 means runtime.GOMAXPROCS(0).
	Workers int `json:"workers"`
	// Seed makes runs repeatable: with Workers == 1 the same seed and
	// corpus give bit-identical vectors.
	Seed uint64 `json:"seed"`
	// Progress, when set, is called about every ProgressEvery (default
	// 200 ms) from a separate goroutine, and once at the end.
	Progress      func(Progress) `json:"-"`
	ProgressEvery time.Duration  `json:"-"`
}

// DefaultOptions returns the settings that measured best on the WordNet
// noun-synset corpus (Spearman against Wu-Palmer on ImageNet-1k, see
// docs/embed.md): PV-DBOW with skip-gram word training, d=100, window 5,
// 5 negatives, min_count 2, sample 1e-3, 15 epochs, alpha 0.025 → 0.0001.
// The word training shares each centre word's noise words (scored as well
// as drawing them per context word, and trains faster: docs/embed.md).
func DefaultOptions() Options {
	return Options{
		Mode:            DBOW,
		DBOWWords:       true,
		SharedNegatives: true,
		Dim:             100,
		Window:          5,
		Negative:        5,
		MinCount:        2,
		Sample:          1e-3,
		Epochs:          15,
		Alpha:           0.025,
		MinAlpha:        0.0001,
		Workers:         0,
		Seed:            1,
	}
}

// MaxDim bounds the vector dimension (models and word2vec files alike).
const MaxDim = 1 << 16

// MaxWindow and MaxNegative bound the context window and the noise words
// per word: a document's noise words are drawn at once (len × Negative of
// them), so a typo such as 10⁹ would exhaust memory, and no corpus needs
// more than hundreds.
const (
	MaxWindow   = 1000
	MaxNegative = 1000
)

func (o Options) validate() error {
	switch {
	case o.Mode != DBOW && o.Mode != DM:
		return fmt.Errorf("embed: mode %q: want %q or %q", o.Mode, DBOW, DM)
	case o.Dim < 1 || o.Dim > MaxDim:
		return fmt.Errorf("embed: dim %d: want 1 to %d", o.Dim, MaxDim)
	case o.Window < 1 || o.Window > MaxWindow:
		return fmt.Errorf("embed: window %d: want 1 to %d", o.Window, MaxWindow)
	case o.Negative < 1 || o.Negative > MaxNegative:
		return fmt.Errorf("embed: negative %d: want 1 to %d (only negative sampling is implemented)", o.Negative, MaxNegative)
	case o.Epochs < 1:
		return fmt.Errorf("embed: epochs %d: want ≥ 1", o.Epochs)
	case o.Alpha <= 0 || o.MinAlpha < 0 || o.MinAlpha > o.Alpha:
		return fmt.Errorf("embed: alpha %g → min alpha %g: want 0 ≤ min alpha ≤ alpha, alpha > 0", o.Alpha, o.MinAlpha)
	case o.Sample < 0:
		return fmt.Errorf("embed: sample %g: want ≥ 0", o.Sample)
	case o.Workers < 0:
		return fmt.Errorf("embed: workers %d: want ≥ 0", o.Workers)
	}
	return nil
}

// Document is one training document: a tag naming it and its tokens.
// Documents with the same tag share one vector.
type Document struct {
	Tag   string
	Words []string
}

// Progress reports training progress.
type Progress struct {
	Epoch          int   // current epoch, 1-based
	Words          int64 // raw in-vocabulary words processed so far, all epochs
	TotalWords     int64 // Words at the end of training
	EffectiveWords int64 // words left after down-sampling, processed so far
	Elapsed        time.Duration
}

// Stats summarises a training run.
type Stats struct {
	Words          int64 // raw in-vocabulary words processed, all epochs
	EffectiveWords int64 // of which kept by down-sampling
	Elapsed        time.Duration
}

// EffectiveWordsPerSecond is the throughput figure gensim logs.
func (s Stats) EffectiveWordsPerSecond() float64 {
	return float64(s.EffectiveWords) / s.Elapsed.Seconds()
}

// Model is a trained doc2vec model. Vectors are row-major float32 matrices
// of Dim columns.
type Model struct {
	Options Options // Progress is not kept
	Vocab   *Vocab
	Tags    []string
	// WordVecs (input word vectors, gensim wv) has Vocab.Len() rows, OutVecs
	// (negative-sampling output weights, gensim syn1neg) Vocab.Len() rows,
	// DocVecs (gensim dv) len(Tags) rows.
	WordVecs, OutVecs, DocVecs []float32

	tagIndex map[string]int
	progress func(Progress)
	neg      *NegativeTable
	sig      *sigmoidTable
}

// ErrNoVocabulary is returned when no word survives min_count.
var ErrNoVocabulary = errors.New("embed: no word occurs min_count times")

// Train builds the vocabulary of docs and trains a model. It stops with
// ctx's error when ctx is cancelled.
func Train(ctx context.Context, docs []Document, opts Options) (*Model, Stats, error) {
	if err := opts.validate(); err != nil {
		return nil, Stats{}, err
	}
	words := make([][]string, len(docs))
	for i, d := range docs {
		words[i] = d.Words
	}
	vocab := BuildVocab(words, opts.MinCount, opts.Sample)
	if vocab.Len() == 0 {
		return nil, Stats{}, ErrNoVocabulary
	}
	m, err := newModel(vocab, opts)
	if err != nil {
		return nil, Stats{}, err
	}
	m.progress = opts.Progress
	c := m.encodeCorpus(docs)
	m.initVectors()
	st, err := m.train(ctx, c)
	return m, st, err
}

// newModel returns an untrained model. Models built from imported word
// vectors have no counts and get no negative-sampling table.
func newModel(vocab *Vocab, opts Options) (*Model, error) {
	opts.Progress = nil
	m := &Model{Options: opts, Vocab: vocab, tagIndex: map[string]int{}, sig: newSigmoidTable()}
	if slices.ContainsFunc(vocab.Counts, func(c int64) bool { return c > 0 }) {
		neg, err := NewNegativeTable(vocab.Counts, 0.75)
		if err != nil {
			return nil, err
		}
		m.neg = neg
	}
	return m, nil
}

// corpus is the training corpus as vocabulary ids.
type corpus struct {
	ids  []int32
	off  []int   // document d is ids[off[d]:off[d+1]]
	tag  []int32 // document d's vector row
	jobs []int   // job j is documents jobs[j]:jobs[j+1]
}

// jobWords is the number of words per work unit handed to a goroutine, as
// gensim's batch_words.
const jobWords = 10000

func (m *Model) encodeCorpus(docs []Document) *corpus {
	c := &corpus{off: make([]int, 1, len(docs)+1), tag: make([]int32, len(docs))}
	for i, d := range docs {
		t, ok := m.tagIndex[d.Tag]
		if !ok {
			t = len(m.Tags)
			m.tagIndex[d.Tag] = t
			m.Tags = append(m.Tags, d.Tag)
		}
		c.tag[i] = int32(t)
		c.ids = m.Vocab.encode(c.ids, d.Words)
		c.off = append(c.off, len(c.ids))
	}
	c.jobs = []int{0}
	for d := range docs {
		if c.off[d+1]-c.off[c.jobs[len(c.jobs)-1]] >= jobWords || d == len(docs)-1 {
			c.jobs = append(c.jobs, d+1)
		}
	}
	if len(docs) == 0 {
		c.jobs = c.jobs[:1]
	}
	return c
}

// initVectors sets word and document vectors to uniform values in
// [-1/Dim, 1/Dim) (gensim 4's initialisation; word2vec.c uses half that
// range) and output weights to 0.
func (m *Model) initVectors() {
	d := m.Options.Dim
	r := newRNG(m.Options.Seed, 1)
	m.WordVecs = make([]float32, m.Vocab.Len()*d)
	for i := range m.WordVecs {
		m.WordVecs[i] = (2*r.float32() - 1) / float32(d)
	}
	m.DocVecs = make([]float32, len(m.Tags)*d)
	for i := range m.DocVecs {
		m.DocVecs[i] = (2*r.float32() - 1) / float32(d)
	}
	m.OutVecs = make([]float32, m.Vocab.Len()*d)
}

type job struct{ epoch, index int }

func (m *Model) train(ctx context.Context, c *corpus) (Stats, error) {
	o := m.Options
	workers := o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	epochWords := int64(len(c.ids))
	total := epochWords * int64(o.Epochs)
	var words, effective atomic.Int64
	var epoch atomic.Int64
	start := time.Now()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := feedJobs(ctx, o.Epochs, len(c.jobs)-1, &epoch)

	report := func() {
		if opts := m.progressFn(); opts != nil {
			opts(Progress{Epoch: int(epoch.Load()), Words: words.Load(), TotalWords: total,
				EffectiveWords: effective.Load(), Elapsed: time.Since(start)})
		}
	}
	stopTicker := func() {}
	if m.progressFn() != nil {
		stopTicker = tick(o.ProgressEvery, report)
	}

	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			defer wg.Done()
			t := m.newTrainer()
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				// The learning rate falls linearly with the position in the
				// whole run, computed from the job's place rather than from
				// shared counters so that it does not depend on scheduling.
				lo, hi := c.jobs[j.index], c.jobs[j.index+1]
				t.rng = newRNG(o.Seed, 2, uint64(j.epoch), uint64(j.index))
				done := int64(j.epoch)*epochWords + int64(c.off[lo])
				var eff int64
				for d := lo; d < hi; d++ {
					progress := float64(done+int64(c.off[d]-c.off[lo])) / float64(total)
					t.alpha = float32(o.Alpha - (o.Alpha-o.MinAlpha)*progress)
					eff += int64(t.document(c.ids[c.off[d]:c.off[d+1]], m.DocVecs[int(c.tag[d])*o.Dim:][:o.Dim], true))
				}
				words.Add(int64(c.off[hi] - c.off[lo]))
				effective.Add(eff)
			}
		}()
	}
	wg.Wait()
	stopTicker()
	st := Stats{Words: words.Load(), EffectiveWords: effective.Load(), Elapsed: time.Since(start)}
	report()
	if err := ctx.Err(); err != nil {
		return st, fmt.Errorf("embed: training stopped after %d of %d words: %w", st.Words, total, context.Cause(ctx))
	}
	return st, nil
}

// feedJobs sends every epoch's work units in order until ctx is done,
// setting epoch (1-based) as each epoch starts, then closes the channel.
func feedJobs(ctx context.Context, epochs, units int, epoch *atomic.Int64) <-chan job {
	jobs := make(chan job)
	go func() {
		defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
		defer close(jobs)
		for e := 0; e < epochs; e++ {
			epoch.Store(int64(e + 1))
			for j := 0; j < units; j++ {
				select {
				case jobs <- job{e, j}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return jobs
}

// tick calls report every `every` (200 ms when ≤ 0) from its own goroutine
// until the returned stop is called; stop returns once it has stopped.
func tick(every time.Duration, report func()) (stop func()) {
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				report()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// progressFn is the callback, kept outside Options so that a stored or
// copied model does not carry it.
func (m *Model) progressFn() func(Progress) { return m.progress }
