package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer"
)

// trainOptions are lcl train's flags: the run's TrainSpec, which they bind
// to, and --config, a file that gives it instead.
type trainOptions struct {
	spec   experiment.TrainSpec
	config string
}

func newTrainCmd(f *Factory) *cobra.Command {
	o := &trainOptions{spec: experiment.NewTrainSpec()}
	o.spec.Exec.DistBind = os.Getenv("LCL_DIST_BIND")
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a classifier with a strategy",
		Long:  trainLong(),
		Example: `  lcl train --synsets fashion-mnist --model cnn --strategy sl --epochs 5 --threads 2 --out runs/fm-cnn
  lcl train --synsets fashion-mnist --data /usr/share/datasets/fashion-mnist --model cnn --strategy sl \
      --fraction 0.1 --epochs 20 --seed 1 --threads 2 --device cpu --out runs/fm-cnn-dr10
  lcl train --data cifar100:/data/cifar-100-binary --model wrn-28-10 --preset wrn-cifar --device cuda --out runs/wrn
  lcl train --out runs/fm-cnn --resume ...same flags...
  lcl train --config run.yaml --out runs/from-file
  lcl train --out runs/fm-cnn --resume --epochs 40 ...same flags...   # continue a finished 20-epoch run
  lcl train --synsets fashion-mnist --model cnn --optimizer adamw --lr 1e-3 --weight-decay 0.05 \
      --clip-grad-norm 1 --ema-decay 0.999 --val-fraction 0.1 --patience 5 --out runs/fm-adamw
  lcl train --data folder:/data/awa2 --model resnet50 --init resnet50.safetensors --init-skip fc --out runs/ft
  lcl train --data cifar100:/data/cifar-100-binary --model torchscript:mynet.pt --preset wrn-cifar --out runs/ts
  lcl train --synsets fashion-mnist --model cnn --nproc 2 --batch 256 --out runs/fm-cnn-ddp`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), f, cmd, o)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false // the table's order, in its groups
	experiment.BindTrainFlags(fl, &o.spec)
	fl.StringVar(&o.config, "config", "", "read the run from a YAML file with a grid cell's keys; flags given override it")
	_ = fl.SetAnnotation("config", experiment.FlagGroup, []string{"run"})
	cmd.SetUsageFunc(groupedUsage)
	return cmd
}

// groupedUsage is lcl train's usage: its flags under the headings of the
// groups of its flag table and the trainer's settings table (the
// experiment.FlagGroup annotation), in the tables' order; then the global
// flags.
func groupedUsage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s", c.UseLine())
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	var groups []string
	byGroup := map[string]*pflag.FlagSet{}
	local := c.LocalFlags() // (adds --help to c.Flags(), which also holds the global ones)
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if local.Lookup(f.Name) == nil {
			return
		}
		g := "other"
		if a := f.Annotations[experiment.FlagGroup]; len(a) == 1 {
			g = a[0]
		}
		if byGroup[g] == nil {
			byGroup[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			byGroup[g].SortFlags = false
			groups = append(groups, g)
		}
		byGroup[g].AddFlag(f)
	})
	for _, g := range groups {
		fmt.Fprintf(w, "\n\n%s%s flags:\n%s", strings.ToUpper(g[:1]), g[1:], strings.TrimRight(byGroup[g].FlagUsagesWrapped(100), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\n\nGlobal Flags:\n%s", strings.TrimRight(c.InheritedFlags().FlagUsagesWrapped(100), " \n"))
	}
	fmt.Fprintln(w)
	return nil
}

// resolve is the spec to run: the flags, or --config FILE with the flags
// given on the command line over it.
func (o *trainOptions) resolve(fs *pflag.FlagSet) (experiment.TrainSpec, error) {
	if o.config == "" {
		return o.spec, nil
	}
	spec, err := experiment.LoadTrainSpec(o.config)
	if err != nil {
		return spec, usagef("--config: %v", err)
	}
	spec.Exec.DistBind = o.spec.Exec.DistBind
	var ferr error
	fs.Visit(func(fl *pflag.Flag) {
		if !experiment.IsTrainFlag(fl.Name) || ferr != nil {
			return // --config itself, global flags
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		if err := spec.SetTrainFlag(fl.Name, values...); err != nil {
			ferr = err
		}
	})
	if ferr != nil {
		return spec, usagef("%v", ferr)
	}
	return spec, nil
}

// commandLine rebuilds the arguments of cmd as given (every flag set on
// the command line, local or global), without --nproc.
func commandLine(cmd *cobra.Command) []string {
	args := strings.Fields(cmd.CommandPath())[1:]
	seen := map[string]bool{}
	add := func(fl *pflag.Flag) {
		if seen[fl.Name] || fl.Name == "nproc" {
			return
		}
		seen[fl.Name] = true
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	}
	cmd.Flags().Visit(add)
	cmd.InheritedFlags().Visit(add)
	return args
}

// trainLong is lcl train's help before its flags: what a run is made of,
// with the presets listed; the details are in `lcl help TOPIC` and docs/.
func trainLong() string {
	return `Train an image classifier on libtorch with a training strategy.

A run is a data set (--data, or --synsets' kind at its default place;
--fraction: the part of the training set, class-stratified: the paper's
DR), an architecture (--model: lcl models; or torchscript:FILE.pt), a
strategy (--strategy: a built-in below, or a plugin) with its similarity
matrix (--source, --matrix or --similarity-key) and an optimisation preset
that the flags override. Built-in strategies:
` + wrapWords(strings.Join(strategy.Names(), ", "), 76, "  ") + `
Presets (lcl models describes them; the default depends on the model):
` + wrapWords(strings.Join(trainer.PresetNames(), ", "), 76, "  ") + `

Training can add augmentation (--randaugment, --trivialaugment,
--random-erasing), mixup/CutMix (--mixup, --cutmix), a moving average of the
weights (--ema-decay), bf16/fp16 autocast (--precision) and model selection
on a validation split (--val-fraction, --select, --patience). Every test
evaluation reports top-1/top-5, and mistake severity and hierarchical
distance where the label set has a hierarchy.

The run directory (--out) gets metrics, TensorBoard events, checkpoints,
model.safetensors and result.json; the run is stored in the store. --resume
continues it to the same final figures as an uninterrupted run.

More: lcl help data | torchscript | recipes | run-dir | distributed, and
docs/trainer.md, docs/data.md.`
}

// wrapWords breaks s into lines of at most width characters at spaces,
// each line indented.
func wrapWords(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, indent+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, "\n")
}
