package cli

import "github.com/spf13/cobra"

// newExperimentCmd is a placeholder until the experiment command lands; it fails with a clear
// message instead of pretending to work.
func newExperimentCmd(f *Factory) *cobra.Command {
	return notYet("experiment", "Run experiment grids")
}
