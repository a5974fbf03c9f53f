package cli

import "github.com/spf13/cobra"

// newWikiCmd is a placeholder until the wiki command lands; it fails with a clear
// message instead of pretending to work.
func newWikiCmd(f *Factory) *cobra.Command {
	return notYet("wiki", "Fetch one document per class")
}
