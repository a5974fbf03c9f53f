package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/trainer"
	"github.com/lcl-project/lcl/trainer/data"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

type evalOptions struct {
	Checkpoint, Data, Model, Device, Precision string
	Threads, Batch, Workers                    int
	TF32, ChannelsLast, TrustModel             bool
}

func newEvalCmd(f *Factory) *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a checkpoint on a test set",
		Long: `Evaluate trained weights on the whole test split: top-1 and top-5 accuracy and
the mean cross-entropy.

--checkpoint is a run directory (its model.safetensors, or
model-best.safetensors, the selected weights, after model selection), a
weights file (model.safetensors, model-ema.safetensors, ...) or a checkpoint
(checkpoint.safetensors: peer 0's last weights). The
model and data set recorded in the file are used unless --model or --data
name others.`,
		Example: `  lcl eval --checkpoint runs/fm-cnn
  lcl eval --checkpoint runs/fm-cnn/checkpoint.safetensors --threads 2 --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Checkpoint, "checkpoint", "", "run directory, weights file or checkpoint (required)")
	fl.StringVar(&o.Data, "data", "", "data set spec (default: the one the weights were trained on)")
	fl.StringVar(&o.Model, "model", "", "architecture (default: the one recorded in the file)")
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
	if err := torch.Check(); err != nil {
		return err
	}
	path := o.Checkpoint
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
		return err
	}
	spec, model := o.Data, o.Model
	if spec == "" {
		spec = meta["lcl.data"]
	}
	if model == "" {
		model = meta["lcl.model"]
	}
	if spec == "" || model == "" {
		return usagef("%s does not record its data set and model: give --data and --model", path)
	}
	_, test, err := data.Open(spec)
	if err != nil {
		return err
	}
	prec, err := torch.ParsePrecision(o.Precision)
	if err != nil {
		return usagef("--precision: %v", err)
	}
	if o.Threads > 0 {
		if err := torch.SetThreads(o.Threads); err != nil {
			return err
		}
	}
	if o.Device != "cpu" {
		if err := torch.SetCUDAFlags(true, o.TF32); err != nil {
			return err
		}
	}
	source := "--model " + model
	if o.Model == "" {
		source = fmt.Sprintf("%s: its lcl.model %q", bounded.Quote(path), model)
	}
	if err := checkFits(source, model, test, batchCheck{"--batch", o.Batch, false}); err != nil {
		return err
	}
	c, h, w := test.Shape()
	reg := models.Builtin()
	reg.TrustScripts = o.TrustModel
	ms, err := reg.Get(model, models.Input{C: c, H: h, W: w, NumClasses: test.NumClasses()})
	if err != nil {
		return err
	}
	m, err := torch.NewModel(ms, o.Device)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := trainer.LoadWeights(path, m); err != nil {
		return err
	}
	if o.ChannelsLast {
		if err := m.ChannelsLast(); err != nil {
			return err
		}
	}
	pm, err := trainer.EvaluateOn(cmd.Context(), m, test, data.BatchSource(data.LoaderConfig{Workers: o.Workers}),
		trainer.EvalOptions{Batch: o.Batch, Device: o.Device, Precision: prec, ChannelsLast: o.ChannelsLast})
	if err != nil {
		return err
	}
	if math.IsNaN(pm.TestLoss) || math.IsInf(pm.TestLoss, 0) {
		// Not a result: broken weights or data (NaN compares false, so the
		// accuracies mean nothing either).
		return fmt.Errorf("%s on %s: the evaluation loss is %v: the weights or the data are not finite, so there is no result", bounded.Quote(path), spec, pm.TestLoss)
	}
	res := map[string]any{"checkpoint": path, "data": spec, "model": model, "images": test.Len(), "device": o.Device,
		"test_top1": pm.TestTop1, "test_top5": pm.TestTop5, "test_loss": pm.TestLoss}
	if f.Emit("eval", res) {
		return nil
	}
	fmt.Fprintf(f.IO.Out, "%s on %s (%d images): top-1 %.2f%%  top-5 %.2f%%  loss %.4f  (%s)\n",
		model, spec, test.Len(), 100*pm.TestTop1, 100*pm.TestTop5, pm.TestLoss, path)
	return nil
}

// fileExists reports whether path names an existing file.
func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}
