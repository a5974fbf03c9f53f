package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/simstore"
	"github.com/lcl-project/lcl/wiki"
)

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

func runWikiResolve(ctx context.Context, f *Factory, o *wikiOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	set, err := f.LabelSet(o.Synsets)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if o.Source == "" {
		st, err := f.ReadStore()
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
	src, err := openSource(ctx, f, o, wn)
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
	st, err := f.ReadStore()
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
