package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
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

func newWikiResolveCmd(f *Factory) *cobra.Command {
	opts := &wikiOptions{}
	cmd := &cobra.Command{
		Use:   "resolve",
		Short: "Print how each class maps to its article, with the reason",
		Long: `Without --source, print the decisions stored by lcl wiki fetch: class, wnid,
source, title and reason. With --source, resolve every class now (nothing is
fetched in full or stored) and print the reason (override, exact, scored,
fallback, wordnet, file) with its detail: the scores of the candidates, or
which fallback was taken and why.`,
		Example: `  lcl wiki resolve --synsets imagenet
  lcl wiki resolve --synsets cifar100 --source dump:enwiki-pages-articles-multistream.xml.bz2`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWikiResolve(cmd.Context(), f, opts) },
	}
	opts.addSourceFlags(cmd, "")
	return cmd
}

func newWikiShowCmd(f *Factory) *cobra.Command {
	var synsets string
	cmd := &cobra.Command{
		Use:   "show WNID|CLASS",
		Short: "Print the stored document of a class",
		Long: `Print the stored document of one class (by wnid or class id) with its
title, source, revision, reason, fetch time and checksum. Without --synsets
every built-in label set is searched.`,
		Example: `  lcl wiki show n02012849
  lcl wiki show --synsets cifar100 orange`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("lcl wiki show takes one WNID or class id, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runWikiShow(cmd.Context(), f, synsets, args[0]) },
	}
	cmd.Flags().StringVar(&synsets, "synsets", "", "label set to look in (default: every built-in set)")
	return cmd
}

// openSource opens the --source; the caller closes it.
func openSource(f *Factory, o *wikiOptions, wn *wordnet.DB) (wiki.Source, error) {
	src, err := wiki.OpenSource(o.Source, wn, wiki.SourceOptions{Endpoint: o.Endpoint, UserAgent: o.UserAgent,
		Concurrency: o.Concurrency, Resolve: wiki.ResolveOptions{MinScore: o.MinScore}, OverridesFile: o.Overrides, Logf: f.Logf})
	var se *wiki.SpecError
	if errors.As(err, &se) {
		return nil, usagef("--source %s: %v", o.Source, err)
	}
	return src, err
}

func runWikiFetch(ctx context.Context, f *Factory, o *wikiOptions) error {
	set, err := f.LabelSet(o.Synsets)
	if err != nil {
		return err
	}
	wn, err := f.WordNet()
	if err != nil {
		return err
	}
	src, err := openSource(f, o, wn)
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

func runWikiResolve(ctx context.Context, f *Factory, o *wikiOptions) error {
	set, err := f.LabelSet(o.Synsets)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if o.Source == "" {
		st, err := f.Store()
		if err != nil {
			return err
		}
		arts, err := st.ListArticles(ctx, set.Name)
		if err != nil {
			return err
		}
		byID := map[string]simstore.Article{}
		for _, a := range arts {
			byID[a.ClassID] = a
		}
		if !f.JSON {
			fmt.Fprintln(tw, "CLASS\tWNID\tSOURCE\tTITLE\tREASON")
		}
		missing := 0
		for _, c := range set.Classes {
			a, ok := byID[c.ID]
			if !ok {
				missing++
				if !f.Emit("decision", map[string]string{"class_id": c.ID, "wnid": c.WNID, "reason": "not fetched"}) {
					fmt.Fprintf(tw, "%s\t%s\t-\t-\tnot fetched\n", c.ID, orDash(c.WNID))
				}
				continue
			}
			if !f.Emit("decision", map[string]string{"class_id": c.ID, "wnid": c.WNID, "source": a.Source, "title": a.Title, "reason": a.Reason}) {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, orDash(c.WNID), a.Source, orDash(a.Title), a.Reason)
			}
		}
		if missing > 0 {
			f.Logf("%d of %d classes are not fetched yet (lcl wiki fetch --synsets %s)", missing, len(set.Classes), o.Synsets)
		}
		return nil
	}
	wn, err := f.WordNet()
	if err != nil {
		return err
	}
	src, err := openSource(f, o, wn)
	if err != nil {
		return err
	}
	defer src.Close()
	reqs := make([]wiki.Request, len(set.Classes))
	for i, c := range set.Classes {
		reqs[i] = wiki.RequestFor(wn, c)
	}
	bar := f.Progress(int64(len(set.Classes)), "wiki resolve "+set.Name)
	outs, err := wiki.Explain(ctx, src, reqs, o.Concurrency, func() { bar.Add(1) })
	bar.Finish()
	if err != nil {
		return err
	}
	if !f.JSON {
		fmt.Fprintln(tw, "CLASS\tWNID\tREASON\tTITLE\tDETAIL")
	}
	failed := 0
	for i, c := range set.Classes {
		if err := outs[i].Err; err != nil {
			failed++
			if !f.Emit("decision", map[string]string{"class_id": c.ID, "wnid": c.WNID, "error": err.Error()}) {
				fmt.Fprintf(tw, "%s\t%s\tfailed\t-\t%v\n", c.ID, orDash(c.WNID), err)
			}
			continue
		}
		d := outs[i].Decision
		title := strings.Join(d.Titles, " | ")
		if !f.Emit("decision", map[string]any{"class_id": c.ID, "wnid": c.WNID, "reason": d.Reason, "titles": d.Titles, "detail": d.Detail, "score": d.Score, "candidates": d.Candidates}) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, orDash(c.WNID), d.Reason, orDash(title), d.Detail)
		}
	}
	if failed > 0 {
		tw.Flush()
		return fmt.Errorf("%d of %d classes could not be resolved", failed, len(set.Classes))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runWikiShow(ctx context.Context, f *Factory, synsets, key string) error {
	names := labels.Names()
	if synsets != "" {
		names = []string{synsets}
	}
	st, err := f.Store()
	if err != nil {
		return err
	}
	found := 0
	for _, name := range names {
		set, err := labels.Load(name)
		if err != nil {
			return err
		}
		for _, c := range set.Classes {
			if c.ID != key && c.WNID != key {
				continue
			}
			a, err := st.GetArticle(ctx, set.Name, c.ID)
			if errors.Is(err, simstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			found++
			if f.Emit("article", a) {
				continue
			}
			if found > 1 {
				fmt.Fprintln(f.IO.Out)
			}
			w := f.IO.Out
			fmt.Fprintf(w, "Label set: %s\nClass:     %s (%s)\nWNID:      %s\nTitle:     %s\nSource:    %s\nRevision:  %s\nReason:    %s\nFetched:   %s\nChecksum:  sha256:%s\n\n%s\n",
				set.Name, c.ID, c.Name, orDash(a.WNID), orDash(a.Title), a.Source, orDash(a.Revision), a.Reason,
				a.FetchedAt.Format(time.RFC3339), a.Checksum, a.Text)
		}
	}
	if found == 0 {
		where := "any built-in label set"
		if synsets != "" {
			where = synsets
		}
		return fmt.Errorf("no stored document for %q in %s (run lcl wiki fetch --synsets SET first)", key, where)
	}
	return nil
}
