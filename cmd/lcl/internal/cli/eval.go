package cli

import "github.com/spf13/cobra"

// newEvalCmd is a placeholder until the eval command lands; it fails with a clear
// message instead of pretending to work.
func newEvalCmd(f *Factory) *cobra.Command {
	return notYet("eval", "Evaluate a checkpoint")
}
