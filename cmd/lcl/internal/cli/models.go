package cli

import "github.com/spf13/cobra"

// newModelsCmd is a placeholder until the models command lands; it fails with a clear
// message instead of pretending to work.
func newModelsCmd(f *Factory) *cobra.Command {
	return notYet("models", "List the model architectures")
}
