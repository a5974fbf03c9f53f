package cli

import "github.com/spf13/cobra"

// newPluginsCmd is a placeholder until the plugins command lands; it fails with a clear
// message instead of pretending to work.
func newPluginsCmd(f *Factory) *cobra.Command {
	return notYet("plugins", "List strategy and similarity plugins")
}
