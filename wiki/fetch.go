package wiki

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wordnet"
)

// ArticleStore is where Fetch keeps documents; *simstore.Store is one.
type ArticleStore interface {
	GetArticle(ctx context.Context, labelSet, classID string) (*simstore.Article, error)
	PutArticles(ctx context.Context, arts ...simstore.Article) error
}

// FetchOptions configure Fetch.
type FetchOptions struct {
	// Concurrency is how many classes are fetched at once (default 1).
	Concurrency int
	// Refresh fetches classes again that the store holds already.
	Refresh bool
	// Progress, if set, is told the number of classes to fetch (done 0)
	// and then after each class how many are done.
	Progress func(done, total int)
	// OnDocument and OnFailure, if set, are told about each class as it
	// finishes, from one goroutine.
	OnDocument func(c labels.Class, doc *Document)
	OnFailure  func(c labels.Class, err error)
}

// FetchSummary counts what Fetch did.
type FetchSummary struct {
	LabelSet string            `json:"label_set"`
	Source   string            `json:"source"`
	Total    int               `json:"total"`
	Fetched  int               `json:"fetched"`
	Cached   int               `json:"cached"`
	Fallback int               `json:"fallback"`
	Failed   int               `json:"failed"`
	Errors   map[string]string `json:"errors,omitempty"` // class id → error
	Elapsed  float64           `json:"elapsed_s"`
	Stopped  bool              `json:"stopped,omitempty"`
}

// batchSize is the most documents stored in one transaction.
const batchSize = 64

// Fetch stores the document of every class of set that src gives and st
// does not hold yet (see Reusable; every class with Refresh). Workers fetch
// in parallel; one writer stores what is ready in small batches, so an
// interrupted fetch keeps every document fetched before it stopped. A class
// that fails is counted and named in the summary, and the others go on.
// The error is the store's or the context's, with the summary of what was
// done (nil when nothing was); failed classes are not errors.
func Fetch(ctx context.Context, st ArticleStore, set *labels.Set, src Source, wn *wordnet.DB, o FetchOptions) (*FetchSummary, error) {
	start := time.Now()
	// A source that cannot be reached at all (ErrUnreachable) stops the
	// fetch at its first answer: every other class would fail alike.
	outer := ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var unreached error
	sum := &FetchSummary{LabelSet: set.Name, Source: src.Name(), Total: len(set.Classes), Errors: map[string]string{}}
	todo, err := toFetch(ctx, st, set, src, o.Refresh, sum)
	if err != nil {
		return nil, err
	}
	progress := func(done int) {
		if o.Progress != nil {
			o.Progress(done, len(todo))
		}
	}
	progress(0)

	results := fetchAll(ctx, src, wn, todo, o.Concurrency)
	// Writes ignore cancellation: a fetched document is always kept.
	keep := context.WithoutCancel(ctx)
	var storeErr error
	batch := make([]simstore.Article, 0, batchSize)
	flush := func() {
		if len(batch) > 0 && storeErr == nil {
			storeErr = st.PutArticles(keep, batch...)
		}
		batch = batch[:0]
	}
	done := 0
	handle := func(r fetched) {
		done++
		progress(done)
		if r.err != nil {
			if ctx.Err() != nil && errors.Is(r.err, context.Canceled) {
				return // stopped, not failed
			}
			if errors.Is(r.err, ErrUnreachable) {
				if unreached == nil {
					unreached = r.err
					stop()
				}
				return
			}
			sum.Failed++
			sum.Errors[r.class.ID] = r.err.Error()
			if o.OnFailure != nil {
				o.OnFailure(r.class, r.err)
			}
			return
		}
		sum.Fetched++
		if r.doc.Fallback() {
			sum.Fallback++
		}
		batch = append(batch, simstore.Article{LabelSet: set.Name, ClassID: r.class.ID, WNID: r.class.WNID,
			Title: r.doc.Title, Text: r.doc.Text, Source: r.doc.Source, Revision: r.doc.Revision, Reason: r.doc.Reason()})
		if o.OnDocument != nil {
			o.OnDocument(r.class, r.doc)
		}
	}
	for r := range results {
		handle(r)
	drain: // whatever else is ready, up to a batch
		for len(batch) < cap(batch) {
			select {
			case r2, ok := <-results:
				if !ok {
					break drain
				}
				handle(r2)
			default:
				break drain
			}
		}
		flush()
	}
	flush()
	sum.Elapsed = time.Since(start).Seconds()
	sum.Stopped = outer.Err() != nil // (an unreachable source is the error below)
	if storeErr != nil {
		return sum, storeErr
	}
	if unreached != nil && outer.Err() == nil {
		return sum, fmt.Errorf("%w; documents without the network: --source wordnet (WordNet's glosses) or --source dump:PATH (a Wikipedia dump)", unreached)
	}
	return sum, outer.Err()
}

// toFetch returns the classes of set to fetch: all with refresh, else
// those with no reusable article in st (counted in sum.Cached); a corrupt
// record is fetched again.
func toFetch(ctx context.Context, st ArticleStore, set *labels.Set, src Source, refresh bool, sum *FetchSummary) ([]labels.Class, error) {
	var todo []labels.Class
	for _, c := range set.Classes {
		if !refresh {
			a, err := st.GetArticle(ctx, set.Name, c.ID)
			if err == nil && Reusable(a, src.Name()) {
				sum.Cached++
				continue
			}
			var ce *simstore.CorruptError
			if err != nil && !errors.Is(err, simstore.ErrNotFound) && !errors.As(err, &ce) {
				return nil, err
			}
		}
		todo = append(todo, c)
	}
	return todo, nil
}

// fetched is the outcome of one class's fetch.
type fetched struct {
	class labels.Class
	doc   *Document
	err   error
}

// fetchAll fetches the documents of todo from src on concurrency workers
// (at least one), in any order; the channel closes after the last. Once
// ctx ends, what is left is not fetched (it stays to fetch next time).
func fetchAll(ctx context.Context, src Source, wn *wordnet.DB, todo []labels.Class, concurrency int) <-chan fetched {
	results := make(chan fetched)
	jobs := make(chan labels.Class)
	var wg sync.WaitGroup
	for range max(concurrency, 1) {
		wg.Go(func() {
			defer crash.Handle() // a panic here is a bug: one line, a report, exit 70
			for c := range jobs {
				if ctx.Err() != nil {
					continue // stopped: what is left stays to fetch next time
				}
				doc, err := src.Document(ctx, RequestFor(wn, c))
				results <- fetched{c, doc, err}
			}
		})
	}
	go func() {
		defer crash.Handle()
		defer close(jobs)
		for _, c := range todo {
			select {
			case jobs <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	return results
}

// Reusable reports whether a stored article counts as done for a fetch from
// source: it came from that source, or it is a fallback document of an
// earlier Wikipedia fetch (a WordNet stand-in is the same from any
// Wikipedia source).
func Reusable(a *simstore.Article, source string) bool {
	return a.Source == source || (source != "wordnet" && source != "dir" && strings.HasPrefix(a.Reason, string(ReasonFallback)))
}

// Outcome is one class's decision, or why there is none.
type Outcome struct {
	Decision *Decision
	Err      error
}

// Explain decides every request with src, concurrency at a time, and
// returns the outcomes in request order; nothing is stored. An
// ArticleSource only resolves titles (no article is fetched in full); the
// other sources give their document's decision. done, if set, is called
// after each request, from several goroutines. The error is the context's.
func Explain(ctx context.Context, src Source, reqs []Request, concurrency int, done func()) ([]Outcome, error) {
	decide := func(req Request) (*Decision, error) {
		if as, ok := src.(*ArticleSource); ok {
			return Resolve(ctx, as.Pages, as.WordNet, req, as.Options)
		}
		doc, err := src.Document(ctx, req)
		if err != nil {
			return nil, err
		}
		return doc.Decision, nil
	}
	outs := make([]Outcome, len(reqs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(concurrency, 1) {
		wg.Go(func() {
			defer crash.Handle()
			for i := range next {
				d, err := decide(reqs[i])
				outs[i] = Outcome{d, err}
				if done != nil {
					done()
				}
			}
		})
	}
	for i := range reqs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return outs, ctx.Err()
}
