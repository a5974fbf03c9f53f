package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/wiki"
	"github.com/lcl-project/lcl/wordnet"
)

// wikiOptions are the flags shared by wiki fetch and wiki resolve.
type wikiOptions struct {
	Synsets     string
	Source      string
	Endpoint    string
	UserAgent   string
	Overrides   string
	Concurrency int
	MinScore    float64
	Refresh     bool
}

func (o *wikiOptions) addSourceFlags(cmd *cobra.Command, sourceDefault string) {
	cmd.Flags().StringVar(&o.Synsets, "synsets", "", "label set: built-in name or file of wnids (required)")
	cmd.Flags().StringVar(&o.Source, "source", sourceDefault, "where documents come from: wordnet, api, dump:PATH (…-pages-articles-multistream.xml.bz2) or dir:PATH (<wnid>.txt files)")
	cmd.Flags().StringVar(&o.Endpoint, "endpoint", wiki.DefaultEndpoint, "MediaWiki Action API endpoint (--source api)")
	cmd.Flags().StringVar(&o.UserAgent, "user-agent", wiki.DefaultUserAgent, "User-Agent sent to the API; Wikimedia asks for a way to contact you")
	cmd.Flags().StringVar(&o.Overrides, "overrides", "", "override file: WNID<TAB>Title[<TAB>Title2…] per line; wins over the heuristic (--source api or dump)")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", 4, "classes resolved at once, and the most API requests in flight")
	cmd.Flags().Float64Var(&o.MinScore, "min-score", 0.05, "least overlap score an article needs to be accepted for a class")
}

// maxWikiConcurrency bounds --concurrency: each unit is a worker (and, for
// --source api, a request in flight to a public server); 100000000 of
// them ran lcl out of memory.
const maxWikiConcurrency = 64

// check refuses, before anything is opened, flag values that would fail
// or misbehave only later.
func (o *wikiOptions) check() error {
	if o.Concurrency < 1 || o.Concurrency > maxWikiConcurrency {
		return usagef("--concurrency %d: want 1 to %d (classes resolved at once, and the most API requests in flight)", o.Concurrency, maxWikiConcurrency)
	}
	if !(o.MinScore >= 0) || math.IsInf(o.MinScore, 1) {
		return usagef("--min-score %g: want a finite value ≥ 0 (0: the default, 0.05)", o.MinScore)
	}
	if o.Source == "api" {
		if err := wiki.CheckEndpoint(o.Endpoint); err != nil {
			return usagef("--endpoint %q: %v", o.Endpoint, err)
		}
	}
	return nil
}

func newWikiCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wiki",
		Short: "Fetch one document per class (Wikipedia or WordNet) into the store",
		Long: `The semantic similarity embeds one document per class: the Wikipedia article
describing the class's WordNet synset, or a document built from WordNet.

Sources (--source):
  wordnet     offline default: the synset's lemmas, gloss and examples, and
              those of its hypernyms and hyponyms
  api         the MediaWiki Action API (--endpoint), online
  dump:PATH   an offline …-pages-articles-multistream.xml.bz2 with its
              -index.txt.bz2 next to it
  dir:PATH    your own texts: PATH/<wnid>.txt (or <class id>.txt)

For api and dump each class's article title is resolved from its synset
(lemmas, "Lemma (hypernym)" forms, disambiguation pages, scored by overlap
with the gloss and hypernyms); an --overrides file wins. A class without an
article falls back to its hypernym's article, then to its WordNet document.
See docs/wiki.md.`,
	}
	cmd.AddCommand(newWikiFetchCmd(f), newWikiResolveCmd(f), newWikiShowCmd(f))
	return cmd
}

func newWikiFetchCmd(f *Factory) *cobra.Command {
	opts := &wikiOptions{}
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Fetch and store the document of every class of a label set",
		Long: `Fetch the document of every class and store it (with source, title,
revision, reason and checksum). Classes already stored from the same source
are skipped unless --refresh; each document is stored as soon as it is
fetched, so an interrupted fetch (Ctrl-C) keeps its work and a rerun fetches
only what is missing. Ends with a summary: fetched / cached / fallback /
failed, and the failed classes with their errors (exit status 1 if any).`,
		Example: `  lcl wiki fetch --synsets imagenet
  lcl wiki fetch --synsets cifar100 --source api --overrides my-titles.tsv
  lcl wiki fetch --synsets imagenet --source dump:enwiki-20240601-pages-articles-multistream.xml.bz2
  lcl wiki fetch --synsets my-classes.txt --source dir:texts/ --refresh`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWikiFetch(cmd.Context(), f, opts) },
	}
	opts.addSourceFlags(cmd, "wordnet")
	cmd.Flags().BoolVar(&opts.Refresh, "refresh", false, "fetch again classes that are already stored")
	return cmd
}

// openSource opens the --source and, for the API, checks that its
// endpoint answers at all (wiki.Probe) before anything is stored; the
// caller closes it.
func openSource(ctx context.Context, f *Factory, o *wikiOptions, wn *wordnet.DB) (wiki.Source, error) {
	src, err := wiki.OpenSource(o.Source, wn, wiki.SourceOptions{Endpoint: o.Endpoint, UserAgent: o.UserAgent,
		Concurrency: o.Concurrency, Resolve: wiki.ResolveOptions{MinScore: o.MinScore}, OverridesFile: o.Overrides, Logf: f.Logf})
	var se *wiki.SpecError
	if errors.As(err, &se) {
		return nil, usagef("--source %s: %v", o.Source, err)
	} else if err != nil {
		return nil, err
	}
	// A host that cannot be reached is left to the requests, which stop at
	// its first answer: a fetch whose classes are all stored needs none.
	if err := wiki.Probe(ctx, src); err != nil && !errors.Is(err, wiki.ErrUnreachable) {
		src.Close()
		return nil, err
	}
	return src, nil
}

func runWikiFetch(ctx context.Context, f *Factory, o *wikiOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	set, err := f.LabelSet(o.Synsets)
	if err != nil {
		return err
	}
	wn, err := f.WordNet()
	if err != nil {
		return err
	}
	src, err := openSource(ctx, f, o, wn)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := f.Store()
	if err != nil {
		return err
	}
	var bar *progressbar.ProgressBar
	sum, err := wiki.Fetch(ctx, st, set, src, wn, wiki.FetchOptions{Concurrency: o.Concurrency, Refresh: o.Refresh,
		Progress: func(done, total int) {
			if bar == nil {
				bar = f.Progress(int64(total), fmt.Sprintf("wiki %s %s", src.Name(), set.Name))
			}
			bar.Set(done)
		},
		OnDocument: func(c labels.Class, doc *wiki.Document) {
			f.Emit("document", map[string]any{"class_id": c.ID, "wnid": c.WNID, "title": doc.Title, "source": doc.Source, "reason": doc.Reason(), "chars": len(doc.Text)})
		},
		OnFailure: func(c labels.Class, err error) {
			f.Emit("failed", map[string]string{"class_id": c.ID, "wnid": c.WNID, "error": err.Error()})
		},
	})
	if bar != nil {
		bar.Finish()
	}
	if sum != nil {
		printFetchSummary(f, sum)
	}
	switch {
	case err != nil:
		return err
	case sum.Failed > 0:
		return fmt.Errorf("%d of %d classes failed (listed above); rerun to retry them", sum.Failed, sum.Total)
	}
	return nil
}

func printFetchSummary(f *Factory, s *wiki.FetchSummary) {
	if f.Emit("summary", s) {
		return
	}
	w := f.IO.Out
	rate := ""
	if s.Elapsed > 0 && s.Fetched > 0 {
		rate = fmt.Sprintf(", %.0f/s", float64(s.Fetched)/s.Elapsed)
	}
	stopped := ""
	if s.Stopped {
		stopped = " (stopped early; rerun to fetch the rest)"
	}
	fmt.Fprintf(w, "%s from %s: %d classes: fetched %d (fallback %d), cached %d, failed %d in %.1fs%s%s\n",
		s.LabelSet, s.Source, s.Total, s.Fetched, s.Fallback, s.Cached, s.Failed, s.Elapsed, rate, stopped)
	for _, id := range sortedKeys(s.Errors) {
		fmt.Fprintf(w, "  failed %s: %s\n", id, s.Errors[id])
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
