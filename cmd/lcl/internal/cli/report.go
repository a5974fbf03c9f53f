package cli

import "github.com/spf13/cobra"

// newReportCmd is a placeholder until the report command lands; it fails with a clear
// message instead of pretending to work.
func newReportCmd(f *Factory) *cobra.Command {
	return notYet("report", "Tables and plots from stored runs")
}
