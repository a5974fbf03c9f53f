package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/simstore"
)

func newStoreCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect and export the store",
		Long: `The store is lcl's database of articles, embedding vectors, similarity
matrices (with provenance) and run results. It lives in --store DIR (default
$LCL_STORE, else $XDG_DATA_HOME/lcl/store, else ~/.local/share/lcl/store).
Commands that only read it (info, ls, export, verify, similarity show, report)
open it read-only, create and change nothing, and can run side by side; a
command that writes needs it to itself. Writes are refused, with nothing
written, while the disk is nearly full. "lcl store verify" checks every table
file and record. A store whose folder (or a folder above it) someone else can
write is refused, as plugins are (docs/plugins.md, trust model). A store a
killed lcl left with an incomplete log entry is recovered by the next command
that opens it (every committed record is kept); "lcl store recover" does only
that.

Keys look like art/SET/CLASS, vec/SET/MODEL, sim/SET/KIND/DIGEST and run/ID;
"lcl store ls" counts them by kind, "lcl store ls --all" lists them.`,
		Example: `  lcl store info
  lcl store ls --kind matrix
  lcl store export sim/imagenet/semantic/0123abcd4567ef89 --format npy -o semantic.npy
  lcl store rm run/3f2a
  lcl store verify
  lcl store recover`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for \"lcl store\" (commands: info, ls, export, rm, verify, recover)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newStoreInfoCmd(f), newStoreLsCmd(f), newStoreExportCmd(f), newStoreRmCmd(f), newStoreVerifyCmd(f), newStoreRecoverCmd(f))
	return cmd
}

func newStoreInfoCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show where the store is and what it holds",
		Example: `  lcl store info
  lcl --store /tmp/s store info --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.ReadStore()
			if err != nil {
				return err
			}
			in, err := s.Info(cmd.Context())
			if err != nil {
				return err
			}
			if f.Emit("store_info", in) {
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "store\t%s\n", in.Dir)
			fmt.Fprintf(tw, "schema\t%d\n", in.SchemaVersion)
			for _, k := range storeKinds {
				fmt.Fprintf(tw, "%s\t%d\n", plural(k), in.Counts[k])
			}
			fmt.Fprintf(tw, "records\t%s\n", humanBytes(in.Bytes))
			fmt.Fprintf(tw, "on disk\t%s\n", humanBytes(in.DiskBytes))
			return tw.Flush()
		},
	}
}

func plural(kind string) string {
	switch kind {
	case simstore.KindMatrix:
		return "matrices"
	case simstore.KindVectors:
		return "vectors"
	}
	return kind + "s"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

var storeKinds = []string{simstore.KindArticle, simstore.KindVectors, simstore.KindMatrix, simstore.KindRun, simstore.KindModel}

func newStoreLsCmd(f *Factory) *cobra.Command {
	var kind string
	var all bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "Summarise the stored records by kind; --all (or --kind) lists them",
		Long: `Summarise the store's records: how many of each kind and their size. A
store holds a record per class for articles (a thousand for ImageNet), so the
records themselves (key, kind, size) follow only with --all, or with --kind
KIND, which restricts both to one kind. With --json every record is one
store_entry line.`,
		Example: `  lcl store ls
  lcl store ls --all
  lcl store ls --kind matrix
  lcl store ls --kind article --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind != "" && !contains(storeKinds, kind) {
				return usagef("--kind %q: want one of %s%s", kind, strings.Join(storeKinds, ", "), suggest.DidYouMean(kind, storeKinds))
			}
			s, err := f.ReadStore()
			if err != nil {
				return err
			}
			entries, err := s.List(cmd.Context(), kind)
			if err != nil {
				return err
			}
			if f.JSON {
				for _, e := range entries {
					f.Emit("store_entry", e)
				}
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			count, size := map[string]int{}, map[string]int64{}
			for _, e := range entries {
				count[e.Kind]++
				size[e.Kind] += e.Size
			}
			if !f.Quiet {
				fmt.Fprintln(tw, "KIND\tRECORDS\tSIZE")
			}
			for _, k := range storeKinds {
				if kind == "" || k == kind {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", plural(k), count[k], humanBytes(size[k]))
				}
			}
			if !all && kind == "" {
				if len(entries) > 0 && !f.Quiet {
					fmt.Fprintln(tw, "\nthe records: lcl store ls --all [--kind KIND]")
				}
				return tw.Flush()
			}
			if !f.Quiet {
				fmt.Fprintln(tw, "\nKEY\tKIND\tSIZE")
			}
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, e.Kind, humanBytes(e.Size))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only records of this kind, listed after their summary: "+strings.Join(storeKinds, ", "))
	cmd.Flags().BoolVar(&all, "all", false, "list every record (key, kind, size) after the summary")
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func newStoreRmCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "rm KEY...",
		Short:   "Delete records",
		Example: `  lcl store rm run/3f2a sim/cifar100/visual/0123abcd4567ef89`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("lcl store rm needs at least one KEY (see lcl store ls)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.Store()
			if err != nil {
				return err
			}
			// All keys or none: a typo in one key deletes nothing.
			err = s.Update(cmd.Context(), func(tx *simstore.Tx) error {
				for _, k := range args {
					if err := tx.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range args {
				if !f.Emit("store_deleted", map[string]string{"key": k}) {
					f.Logf("deleted %s", k)
				}
			}
			return nil
		},
	}
}

func newStoreRecoverCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Recover a store a killed lcl left with an incomplete log entry",
		Long: `Open the store for writing and close it: Badger replays its log and drops
the entry a killed lcl (kill -9, a power cut) left incomplete. Every committed
record is kept (each commit is synced before lcl goes on). Any command that
opens the store does this too; lcl store verify only reports it.`,
		Example: `  lcl store recover && lcl store verify`,
		Args:    noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := f.storeDir()
			if err := simstore.Recover(dir); err != nil {
				return err
			}
			if !f.Emit("store_recovered", map[string]string{"dir": dir}) {
				f.Logf("store %s: recovered", bounded.Quote(dir))
			}
			return nil
		},
	}
}
