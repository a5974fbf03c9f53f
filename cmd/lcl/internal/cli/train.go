package cli

import "github.com/spf13/cobra"

// newTrainCmd is a placeholder until the train command lands; it fails with a clear
// message instead of pretending to work.
func newTrainCmd(f *Factory) *cobra.Command {
	return notYet("train", "Train a classifier with a strategy")
}
