package cli

import "github.com/spf13/cobra"

// newStoreCmd is a placeholder until the store command lands; it fails with a clear
// message instead of pretending to work.
func newStoreCmd(f *Factory) *cobra.Command {
	return notYet("store", "Inspect and export the store")
}
