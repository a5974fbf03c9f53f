package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
)

type synsetsOptions struct {
	Synsets string
}

func newSynsetsCmd(f *Factory) *cobra.Command {
	opts := &synsetsOptions{}
	cmd := &cobra.Command{
		Use:   "synsets [NAME|FILE]",
		Short: "List a label set's classes with their WordNet synsets and glosses",
		Long: `List a label set: index, id, name, wnid and the first line of the synset's
WordNet gloss.

A label set is a built-in name (` + strings.Join(labels.Names(), ", ") + `)
or a file with one class per line: a wnid (n02119789) or NAME<TAB>WNID;
blank lines and lines starting with # are ignored.`,
		Example: `  lcl synsets imagenet
  lcl synsets --synsets cifar100 --json
  lcl synsets my-classes.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if opts.Synsets != "" && opts.Synsets != args[0] {
					return usagef("give the label set once: as an argument or with --synsets")
				}
				opts.Synsets = args[0]
			}
			return runSynsets(f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Synsets, "synsets", "", "label set: built-in name or file")
	return cmd
}

func runSynsets(f *Factory, opts *synsetsOptions) error {
	set, err := f.LabelSet(opts.Synsets)
	if err != nil {
		return err
	}
	var gloss func(wnid string) string
	if set.Classes[0].WNID != "" {
		wn, err := f.WordNetOf(wnidsOf(set))
		if err != nil {
			return err
		}
		gloss = func(wnid string) string {
			s, err := wn.Synset(wnid)
			if err != nil {
				return ""
			}
			return s.Gloss
		}
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	if !f.JSON {
		fmt.Fprintln(tw, "INDEX\tID\tNAME\tWNID\tGLOSS")
	}
	for _, c := range set.Classes {
		g := ""
		if gloss != nil && c.WNID != "" {
			g = gloss(c.WNID)
		}
		if f.Emit("synset", map[string]any{"index": c.Index, "id": c.ID, "name": c.Name, "wnid": c.WNID, "lemma": c.Lemma, "gloss": g}) {
			continue
		}
		wnid := c.WNID
		if wnid == "" {
			wnid = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Index, c.ID, c.Name, wnid, firstLine(g, 70))
	}
	return tw.Flush()
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
