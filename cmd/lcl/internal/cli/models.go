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
		Short: "List the model architectures, optimisation presets and optimizers",
		Long: `List the architectures lcl train --model accepts, with their parameter
counts (for the input their published count is for: ImageNet 3×224×224 or
3×299×299 with 1000 classes, CIFAR 3×32×32, Fashion-MNIST 1×28×28), their
default optimisation preset (the protocol of their publication; in
parentheses a family's ImageNet protocol, for inputs over 64 pixels) and options (--model
NAME:key=value,...); the optimisation presets of --preset; and the
optimizers of --optimizer with their parameters (--optim-param NAME=VALUE;
momentum, weight_decay and nesterov are the preset's or --momentum,
--weight-decay, --nesterov). A star marks the nine architectures of the
paper; PUBLISHED is the count their papers or torchvision/timm state.
Every built-in model also takes proj=N (e.g. cnn:proj=345): HAFrame's
projection of its features to N dimensions (bias-free linear layer, batch
norm, two residual PReLU layers) before its head, so that the features can
take any sign (--strategy haframe; docs/trainer.md, "Models").
--model torchscript:FILE.pt trains any TorchScript module (docs/trainer.md;
its default preset is fmnist-cnn).`,
		Example: `  lcl models
  lcl train --model resnet18:stem=cifar,width=32 ...
  lcl train --model densenet:depth=100,growth=12 ...
  lcl models --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			if !f.JSON {
				fmt.Fprintln(tw, "MODEL\tPARAMS\tPUBLISHED\tFOR\tPRESET\tOPTIONS\tDESCRIPTION")
			}
			reg := models.Builtin()
			for _, m := range reg.List() {
				spec, err := reg.Get(m.Name, m.Reference)
				if err != nil {
					return err
				}
				n := spec.NumParams()
				in := m.Reference
				if f.Emit("model", map[string]any{"name": m.Name, "options": m.Options, "doc": m.Doc, "params": n,
					"published_millions": m.Published, "paper": m.Paper,
					"input": []int{in.C, in.H, in.W}, "classes": in.NumClasses, "preset": m.Preset, "large_preset": m.LargePreset}) {
					continue
				}
				name, pub := m.Name, m.Published
				if m.Paper {
					name += " *"
				}
				if pub != "" {
					pub += "M"
				}
				preset := m.Preset
				if m.LargePreset != "" {
					preset += " (" + m.LargePreset + ")" // over 64 pixels
				}
				fmt.Fprintf(tw, "%s\t%.2fM\t%s\t%dx%dx%d/%d\t%s\t%s\t%s\n", name, float64(n)/1e6, pub, in.C, in.H, in.W, in.NumClasses,
					preset, strings.Join(m.Options, ","), m.Doc)
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
			printOptimizers(f, tw)
			return tw.Flush()
		},
	}
}

// printOptimizers lists --optimizer's choices with their parameters and
// defaults (--optim-param NAME=VALUE).
func printOptimizers(f *Factory, tw *tabwriter.Writer) {
	if !f.JSON {
		fmt.Fprintln(tw, "\nOPTIMIZER\tPARAMETERS (DEFAULTS)\tDESCRIPTION")
	}
	for _, k := range trainer.Optimizers() {
		var params []string
		var js []map[string]any
		for _, p := range k.Params {
			params = append(params, fmt.Sprintf("%s=%g", p.Name, p.Default))
			js = append(js, map[string]any{"name": p.Name, "default": p.Default, "doc": p.Doc})
		}
		if f.Emit("optimizer", map[string]any{"name": k.Name, "doc": k.Doc, "params": js}) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, strings.Join(params, ","), k.Doc)
	}
}
