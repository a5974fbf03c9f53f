package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/simstore"
)

func newStoreVerifyCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check every table file and every record of the store; list what is damaged",
		Long: `Check the store without changing it: every table file (*.sst) against
Badger's index and block checksums (this works even when the store no longer
opens), then every record: its CRC-32C, its chunks and the value log's
checksum, and every key (a damaged key no longer names a record). Each damaged
table or record is one line; the exit status is 1 when anything is damaged.
A missing MANIFEST (beside table or log files) is damage too. Read-only: it
changes nothing, can run beside other readers (lcl store ls, export), not
beside a writer; a store a killed lcl left with an incomplete log entry is
reported with what to run (lcl store recover), not recovered. See docs/store.md (Integrity) for what each finding means.`,
		Example: `  lcl store verify
  lcl --store /data/lcl-store store verify --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := f.storeDir()
			tables, problems, err := simstore.VerifyTables(dir)
			if err != nil {
				return err
			}
			report := func(p simstore.Problem) {
				if !f.Emit("store_problem", p) {
					fmt.Fprintln(f.IO.Out, "damaged:", p.String())
				}
			}
			for _, p := range problems {
				report(p)
			}
			s, err := f.readStore(false)
			if err != nil {
				if len(problems) > 0 {
					return fmt.Errorf("store %s: %d damaged (listed above), and it cannot be opened: %w", bounded.Quote(dir), len(problems), err)
				}
				return err
			}
			bar := f.Progress(-1, "verify")
			records, bad, err := s.Verify(cmd.Context(), func() { bar.Add(1) })
			bar.Finish()
			if err != nil {
				return err
			}
			for _, p := range bad {
				report(p)
			}
			problems = append(problems, bad...)
			if !f.Emit("store_verified", map[string]any{"dir": dir, "tables": tables, "records": records, "damaged": len(problems)}) {
				f.Logf("checked %d table files and %d records in %s: %d damaged", tables, records, bounded.Quote(dir), len(problems))
			}
			if len(problems) > 0 {
				return fmt.Errorf("store %s: %d damaged (listed above): restore the folder from a backup, or remove damaged records with lcl store rm and compute them again", bounded.Quote(dir), len(problems))
			}
			return nil
		},
	}
}
