package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// notYet is the command for a feature that is not built yet.
func notYet(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              short + " (not built yet)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("lcl %s is not built yet in this version", name)
		},
	}
}
