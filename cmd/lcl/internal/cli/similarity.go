package cli

import "github.com/spf13/cobra"

// newSimilarityCmd is a placeholder until the similarity command lands; it fails with a clear
// message instead of pretending to work.
func newSimilarityCmd(f *Factory) *cobra.Command {
	return notYet("similarity", "Compute and inspect class similarity matrices")
}
