package cli

import "github.com/spf13/cobra"

// newPlanCmd is a placeholder until the plan command lands; it fails with a clear
// message instead of pretending to work.
func newPlanCmd(f *Factory) *cobra.Command {
	return notYet("plan", "Write a strategy's per-epoch targets without training")
}
