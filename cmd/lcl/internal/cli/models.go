package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/models"
)

func newModelsCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "models",
		Short: "List the model architectures and optimisation presets",
		Long: `List the architectures lcl train --model accepts, with their options
(--model NAME:key=value,...), and the optimisation presets of --preset.`,
		Example: `  lcl models
  lcl train --model resnet18:stem=cifar,width=32 ...
  lcl models --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			if !f.JSON {
				fmt.Fprintln(tw, "MODEL\tOPTIONS\tDESCRIPTION")
			}
			for _, m := range models.Builtin().List() {
				if f.Emit("model", map[string]any{"name": m.Name, "options": m.Options, "doc": m.Doc}) {
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, strings.Join(m.Options, ","), m.Doc)
			}
			if !f.JSON {
				fmt.Fprintln(tw, "\nPRESET\t\tPROTOCOL")
			}
			for _, p := range trainer.Presets() {
				if f.Emit("preset", p) {
					continue
				}
				fmt.Fprintf(tw, "%s\t\t%s\n", p.Name, p.Doc)
			}
			return tw.Flush()
		},
	}
}
