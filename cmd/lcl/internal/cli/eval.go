package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/experiment"
	"github.com/lcl-project/lcl/experiment/trainrun"
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/similarity"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

type evalOptions struct {
	Checkpoint, Data, Model, Device, Precision, Synsets string
	Threads, Batch, Workers                             int
	TF32, ChannelsLast, TrustModel, CRM                 bool
}

func newEvalCmd(f *Factory) *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a checkpoint on a test set",
		Long: `Evaluate trained weights on the whole test split: top-1 and top-5 accuracy and
the mean cross-entropy, and for a label set with a hierarchy (its own, or
WordNet when every class has a wnid) the hierarchical metrics of Bertinetto
et al. (CVPR 2020): mistake severity (the mean height of the lowest common
ancestor of the true class and the top-1 prediction, over the mistakes) and
the hierarchical distance@1/5/20 (the mean over examples of that height for
each of the k best classes).

--crm adds the same figures for conditional risk minimisation (Karthik et
al., ICLR 2021): each example's classes ranked by their expected LCA
height under the model's softmax, least first (the argmin is the
prediction), next to the plain argmax. It holds the C×C cost matrix on the
device.

--checkpoint is a run directory (its model.safetensors, or
model-best.safetensors, the selected weights, after model selection), a
weights file (model.safetensors, model-ema.safetensors, ...) or a checkpoint
(checkpoint.safetensors: peer 0's last weights). The
model and data set recorded in the file are used unless --model or --data
name others.`,
		Example: `  lcl eval --checkpoint runs/fm-cnn
  lcl eval --checkpoint runs/fm-cnn/checkpoint.safetensors --threads 2 --json
  lcl eval --checkpoint runs/c100-resnet18 --crm`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Checkpoint, "checkpoint", "", "run directory, weights file or checkpoint (required)")
	fl.StringVar(&o.Data, "data", "", "data set spec (default: the one the weights were trained on)")
	fl.StringVar(&o.Model, "model", "", "architecture (default: the one recorded in the file)")
	fl.StringVar(&o.Synsets, "synsets", "", "label set of the classes, for the hierarchical metrics (default: the built-in set named like the data)")
	fl.BoolVar(&o.CRM, "crm", false, "also report conditional risk minimisation's predictions (needs a hierarchy)")
	fl.BoolVar(&o.TrustModel, "trust-model", false, "let a TorchScript model call operators that reach the file system, the network or the terminal (see lcl train --help)")
	fl.StringVar(&o.Device, "device", "cpu", "cpu, cuda or cuda:N")
	fl.IntVar(&o.Threads, "threads", 0, "libtorch threads (0 = libtorch's default)")
	fl.IntVar(&o.Batch, "batch", 256, "evaluation batch size")
	fl.IntVar(&o.Workers, "workers", 0, "data decoding goroutines (0 = number of CPUs)")
	fl.StringVar(&o.Precision, "precision", "fp32", "forward pass in fp32, bf16 or fp16 (autocast)")
	fl.BoolVar(&o.ChannelsLast, "channels-last", false, "channels-last memory format")
	fl.BoolVar(&o.TF32, "tf32", false, "allow TF32 in float32 matmuls and convolutions (CUDA; off: exact float32, so CPU and GPU agree)")
	return cmd
}

func runEval(cmd *cobra.Command, f *Factory, o *evalOptions) error {
	if o.Checkpoint == "" {
		return usagef("--checkpoint is required")
	}
	if err := o.check(); err != nil {
		return err
	}
	if err := torch.Check(); err != nil {
		return err
	}
	path, spec, model, err := o.weights()
	if err != nil {
		return err
	}
	_, test, err := data.Open(spec)
	if err != nil {
		return err
	}
	eo, err := o.options(f, spec, test)
	if err != nil {
		return err
	}
	if err := o.runtime(); err != nil {
		return err
	}
	m, err := o.model(path, model, test)
	if err != nil {
		return err
	}
	defer m.Close()
	pm, err := trainer.EvaluateOn(cmd.Context(), m, test, data.BatchSource(data.LoaderConfig{Workers: o.Workers}), eo)
	if err != nil {
		return err
	}
	if math.IsNaN(pm.TestLoss) || math.IsInf(pm.TestLoss, 0) {
		// Not a result: broken weights or data (NaN compares false, so the
		// accuracies mean nothing either).
		return fmt.Errorf("%s on %s: the evaluation loss is %v: the weights or the data are not finite, so there is no result", bounded.Quote(path), spec, pm.TestLoss)
	}
	printEval(f, pm, eo, map[string]any{"checkpoint": path, "data": spec, "model": model, "images": test.Len(), "device": o.Device})
	return nil
}

// check refuses flag values out of range before anything is opened, naming
// the flag, what is accepted and the nearest choice.
func (o *evalOptions) check() error {
	if _, err := os.Stat(o.Checkpoint); err != nil {
		return usagef("--checkpoint %s: no such file or folder (want a run directory, a weights file or a checkpoint)", bounded.Quote(o.Checkpoint))
	}
	if names := []string{"fp32", "bf16", "fp16"}; !slices.Contains(names, o.Precision) {
		return usagef("--precision %q: want fp32, bf16 or fp16%s", o.Precision, suggest.DidYouMean(o.Precision, names))
	}
	if err := trainer.CheckDevice(o.Device); err != nil {
		return &usageError{err}
	}
	switch {
	case o.Batch < 1 || o.Batch > trainer.MaxBatch:
		return usagef("--batch %d: want ≥ 1, at most %d", o.Batch, trainer.MaxBatch)
	case o.Threads < 0 || o.Threads > experiment.MaxProcs:
		return usagef("--threads %d: want ≥ 0 (0: libtorch's default), at most %d", o.Threads, experiment.MaxProcs)
	case o.Workers < 0 || o.Workers > experiment.MaxProcs:
		return usagef("--workers %d: want ≥ 0 (0: the number of CPUs), at most %d", o.Workers, experiment.MaxProcs)
	}
	return nil
}

// weights is the weights file to evaluate (a run directory's selected
// weights) and the data set and model it is evaluated with: the flags, else
// what the file records.
func (o *evalOptions) weights() (path, spec, model string, err error) {
	path = o.Checkpoint
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// The weights of the run's figures: after model selection the
		// selected ones.
		path = filepath.Join(o.Checkpoint, "model.safetensors")
		if best := filepath.Join(o.Checkpoint, "model-best.safetensors"); fileExists(best) {
			path = best
		}
	}
	meta, err := trainer.WeightsMeta(path)
	if err != nil {
		return "", "", "", err
	}
	spec, model = o.Data, o.Model
	if spec == "" {
		spec = meta["lcl.data"]
	}
	if model == "" {
		model = meta["lcl.model"]
	}
	if spec == "" || model == "" {
		return "", "", "", usagef("%s does not record its data set and model: give --data and --model", path)
	}
	return path, spec, model, nil
}

// options are the evaluation's settings: batch, device, precision, and the
// class hierarchy (with --crm its cost matrix) where the label set has one.
func (o *evalOptions) options(f *Factory, spec string, test data.Dataset) (trainer.EvalOptions, error) {
	eo := trainer.EvalOptions{Batch: o.Batch, Device: o.Device, ChannelsLast: o.ChannelsLast}
	set, err := data.LabelSet(o.Synsets, spec)
	if err != nil {
		return eo, usagef("%v", err)
	}
	if set != nil && set.Len() != test.NumClasses() {
		return eo, usagef("--synsets: label set %s has %d classes, the data %s has %d", set.Name, set.Len(), spec, test.NumClasses())
	}
	if h, why := trainrun.Hierarchy(set, f.WordNetOf); h != nil {
		eo.Hierarchy = h
		if o.CRM {
			if eo.Cost, err = h.Matrix(0); err != nil {
				return eo, fmt.Errorf("--crm: %w", err)
			}
		}
	} else if o.CRM {
		return eo, usagef("--crm needs a hierarchy of the classes: %s (give --synsets)", why)
	} else if set != nil {
		f.Logf("lcl eval: no hierarchical metrics: %s", why)
	}
	if eo.Precision, err = torch.ParsePrecision(o.Precision); err != nil {
		return eo, usagef("--precision: %v", err)
	}
	return eo, nil
}

// runtime applies --threads and, on CUDA, --tf32.
func (o *evalOptions) runtime() error {
	if o.Threads > 0 {
		if err := torch.SetThreads(o.Threads); err != nil {
			return err
		}
	}
	if o.Device != "cpu" {
		return torch.SetCUDAFlags(true, o.TF32)
	}
	return nil
}

// model builds the architecture on the device and loads the weights at
// path into it.
func (o *evalOptions) model(path, model string, test data.Dataset) (*torch.Model, error) {
	source := "--model " + model
	if o.Model == "" {
		source = fmt.Sprintf("%s: its lcl.model %q", bounded.Quote(path), model)
	}
	if err := checkFits(source, model, test, batchCheck{"--batch", o.Batch, false}); err != nil {
		return nil, err
	}
	c, h, w := test.Shape()
	reg := models.Builtin()
	reg.TrustScripts = o.TrustModel
	ms, err := reg.Get(model, models.Input{C: c, H: h, W: w, NumClasses: test.NumClasses()})
	if err != nil {
		return nil, err
	}
	m, err := torch.NewModel(ms, o.Device)
	if err != nil {
		return nil, err
	}
	if _, err := trainer.LoadWeights(path, m); err != nil {
		m.Close()
		return nil, err
	}
	if o.ChannelsLast {
		if err := m.ChannelsLast(); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// printEval prints the figures (a JSON line with --json); res holds what
// was evaluated.
func printEval(f *Factory, pm trainer.PeerMetrics, eo trainer.EvalOptions, res map[string]any) {
	res["test_top1"], res["test_top5"], res["test_loss"] = pm.TestTop1, pm.TestTop5, pm.TestLoss
	if h := pm.TestHier; h != nil {
		res["test_hier"], res["hierarchy"] = h, eo.Hierarchy.(*similarity.Hierarchy).Graph()
	}
	if c := pm.TestCRM; c != nil {
		res["test_crm"] = c
	}
	if f.Emit("eval", res) {
		return
	}
	fmt.Fprintf(f.IO.Out, "%s on %s (%d images): top-1 %.2f%%  top-5 %.2f%%  loss %.4f  (%s)\n",
		res["model"], res["data"], res["images"], 100*pm.TestTop1, 100*pm.TestTop5, pm.TestLoss, res["checkpoint"])
	if h := pm.TestHier; h != nil {
		fmt.Fprintf(f.IO.Out, "  argmax: %s\n", hierLine(pm.TestTop1, *h))
		if l := heightLine(*h); l != "" {
			fmt.Fprintf(f.IO.Out, "          %s\n", l)
		}
	}
	if c := pm.TestCRM; c != nil {
		fmt.Fprintf(f.IO.Out, "  CRM:    %s\n", hierLine(c.Top1, c.HierMetrics))
		if l := heightLine(c.HierMetrics); l != "" {
			fmt.Fprintf(f.IO.Out, "          %s\n", l)
		}
	}
}

// heightLine is the distribution of an evaluation's top-1 mistakes over
// LCA heights, as counts ("" without mistakes): with top-1 and the mean it
// shows whether a lower mean severity came from more mistakes of low height.
func heightLine(h trainer.HierMetrics) string {
	if h.Mistakes == 0 {
		return ""
	}
	var parts []string
	for height, n := range h.MistakesByHeight {
		if n > 0 {
			label := strconv.Itoa(height)
			if height == trainer.HierHeights-1 {
				label += "+"
			}
			parts = append(parts, fmt.Sprintf("%s: %d", label, n))
		}
	}
	return fmt.Sprintf("mistakes by LCA height  %s  (%d mistakes)", strings.Join(parts, "  "), h.Mistakes)
}

// hierLine is one line of an evaluation's hierarchical figures.
func hierLine(top1 float64, h trainer.HierMetrics) string {
	sev := "–"
	if h.Mistakes > 0 {
		sev = fmt.Sprintf("%.3f", h.MistakeSeverity)
	}
	return fmt.Sprintf("top-1 %.2f%%  mistake severity %s  hier. dist@1 %.3f  @5 %.3f  @20 %.3f",
		100*top1, sev, h.HDist1, h.HDist5, h.HDist20)
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
