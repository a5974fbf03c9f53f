package cli

import "github.com/spf13/cobra"

// newEmbedCmd is a placeholder until the embed command lands; it fails with a clear
// message instead of pretending to work.
func newEmbedCmd(f *Factory) *cobra.Command {
	return notYet("embed", "Embed class documents with doc2vec")
}
