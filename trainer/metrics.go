package trainer

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/lcl-project/lcl/curriculum"
)

// PeerMetrics are one model's figures for an epoch.
type PeerMetrics struct {
	TrainLoss float64 `json:"train_loss"`
	TrainTop1 float64 `json:"train_top1"`
	TestTop1  float64 `json:"test_top1"`
	TestTop5  float64 `json:"test_top5"`
	TestLoss  float64 `json:"test_loss"`
	// TestHier holds the hierarchical metrics on the test set when the
	// run has a hierarchy (Config.Hierarchy).
	TestHier *HierMetrics `json:"test_hier,omitempty"`
	// TestCRM holds the figures of conditional risk minimisation's
	// predictions (EvalOptions.Cost; lcl eval --crm only).
	TestCRM *CRMMetrics `json:"test_crm,omitempty"`
}

// CRMMetrics are the figures of the predictions of conditional risk
// minimisation (Karthik et al., ICLR 2021): each example's classes ranked
// by their expected cost Σ_i p_i·D[i][j] under the model's softmax p,
// least first.
type CRMMetrics struct {
	Top1 float64 `json:"top1"`
	HierMetrics
}

// EpochMetrics is one line of metrics.jsonl.
type EpochMetrics struct {
	MessageType string  `json:"message_type"` // "epoch"
	Stage       string  `json:"stage"`
	StageIndex  int     `json:"stage_index"`
	Epoch       int     `json:"epoch"` // 1-based
	Epochs      int     `json:"epochs"`
	LR          float64 `json:"lr"`
	Images      int64   `json:"images"`
	// Steps are the epoch's optimiser steps; GlobalStep is the run's
	// steps at its end, every stage counted (TensorBoard's step).
	Steps      int     `json:"steps"`
	GlobalStep int64   `json:"global_step"`
	Seconds    float64 `json:"seconds"`   // this epoch's training (its steps, also across a resume)
	ImgPerSec  float64 `json:"img_per_s"` // training images per second
	// EvalSeconds is this epoch's evaluation of every peer on the test set,
	// EvalImgPerSec the test images (times peers) per second of it.
	EvalSeconds   float64       `json:"eval_seconds"`
	EvalImgPerSec float64       `json:"eval_img_per_s"`
	PeerMetrics                 // peer 0
	Peers         []PeerMetrics `json:"peers,omitempty"` // every peer when there are several
	// Top1 and Top5 repeat the test accuracy of every peer (one entry per
	// model), the per-epoch shape lcl report and lcl experiment read.
	Top1 []float64 `json:"top1"`
	Top5 []float64 `json:"top5"`
	// TargetEntropy is the mean over classes of the entropy (nats) of the
	// epoch's target rows: 0 for one-hot, falling over the epochs under LCL.
	TargetEntropy float64 `json:"target_entropy"`
	// Val holds every peer's figures on the validation split
	// (Config.ValFraction), one entry per peer.
	Val []HeldOut `json:"val,omitempty"`
	// EMA holds the figures of every peer's moving average of the weights
	// (Optim.EMADecay), one entry per peer.
	EMA []EMAMetrics `json:"ema,omitempty"`
	// Best is, per peer, the epoch (1-based, of this stage) whose weights
	// model selection keeps so far (Config.ValFraction; the last stage only).
	Best []int `json:"best_epoch,omitempty"`
}

// HeldOut are a model's figures on a held-out set: top-1 and top-5
// accuracy and the mean cross-entropy.
type HeldOut struct {
	Top1 float64 `json:"top1"`
	Top5 float64 `json:"top5"`
	Loss float64 `json:"loss"`
}

// EMAMetrics are the figures of a moving average of a peer's weights: on
// the test set (in the epochs the test set is evaluated) and on the
// validation split.
type EMAMetrics struct {
	Test *HeldOut `json:"test,omitempty"`
	Val  *HeldOut `json:"val,omitempty"`
}

// Tested reports whether the epoch's line holds test figures: every epoch
// does, except with a validation split, which evaluates the test set once,
// at the end, unless Config.TestEveryEpoch.
func (m EpochMetrics) Tested() bool { return m.Top1 != nil }

// MarshalJSON leaves the test figures out of an epoch that did not
// evaluate the test set (rather than writing zeros).
func (m EpochMetrics) MarshalJSON() ([]byte, error) {
	type plain EpochMetrics
	b, err := json.Marshal(plain(m))
	if err != nil || m.Tested() {
		return b, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	for _, k := range []string{"test_top1", "test_top5", "test_loss", "test_hier", "top1", "top5"} {
		delete(obj, k)
	}
	if len(m.Peers) > 0 {
		peers := make([]map[string]float64, len(m.Peers))
		for i, p := range m.Peers {
			peers[i] = map[string]float64{"train_loss": p.TrainLoss, "train_top1": p.TrainTop1}
		}
		if obj["peers"], err = json.Marshal(peers); err != nil {
			return nil, err
		}
	}
	return json.Marshal(obj)
}

// heldOut is the test part of pm.
func heldOut(pm PeerMetrics) HeldOut {
	return HeldOut{Top1: pm.TestTop1, Top5: pm.TestTop5, Loss: pm.TestLoss}
}

// Result is the outcome of a run. Final, Top1 and Top5 are the test
// figures of the last epoch's weights, or with a validation split those of
// the weights model selection kept (Selection says which).
type Result struct {
	Strategy string `json:"strategy"`
	Model    string `json:"model"`
	Seed     int64  `json:"seed"`
	// Precision is the forward passes' precision the run executed in (what
	// --precision auto chose, too).
	Precision string `json:"precision"`
	// Augment is the training augmentation on top of the data set's crop
	// and flip (Config.Augment), when there was one.
	Augment string `json:"augment,omitempty"`
	// Mix is the run's mixup and CutMix (Config.Mix), when it had them.
	Mix   string        `json:"mix,omitempty"`
	Final []PeerMetrics `json:"final"` // each peer of the last stage after its last epoch
	Top1  []float64     `json:"top1"`  // Final's test top-1, one per peer (lcl experiment reads these)
	Top5  []float64     `json:"top5"`
	// MistakeSeverity, HDist1, HDist5 and HDist20 repeat Final's
	// hierarchical metrics, one per peer, when the run has a hierarchy;
	// Mistakes and MistakesByHeight the number of top-1 mistakes and their
	// distribution over LCA heights (HierMetrics.MistakesByHeight).
	MistakeSeverity  []float64      `json:"mistake_severity,omitempty"`
	Mistakes         []int64        `json:"mistakes,omitempty"`
	MistakesByHeight [][]int64      `json:"mistakes_by_height,omitempty"`
	HDist1           []float64      `json:"hdist1,omitempty"`
	HDist5           []float64      `json:"hdist5,omitempty"`
	HDist20          []float64      `json:"hdist20,omitempty"`
	Epochs           []EpochMetrics `json:"epochs"`
	Seconds          float64        `json:"seconds"`
	// UserSeconds and SystemSeconds are the CPU time of this process (every
	// thread) during the run, in user mode and in the kernel. A system share
	// above a few percent means time lost to page faults or spinning threads
	// (docs/trainer.md, "Where the time goes").
	UserSeconds   float64 `json:"user_seconds"`
	SystemSeconds float64 `json:"system_seconds"`
	Checkpoint    string  `json:"checkpoint,omitempty"`
	// Weights is the file of peer 0's weights the figures are of
	// (model.safetensors, or model-best.safetensors after selection).
	Weights string `json:"weights,omitempty"`
	// EMA holds the last epoch's test figures of each peer's moving average
	// of the weights (Optim.EMADecay; without a validation split).
	EMA []HeldOut `json:"ema,omitempty"`
	// Selection says how the weights of the figures were chosen, when a
	// validation split chose them.
	Selection *Selection `json:"selection,omitempty"`
}

// Selection is the model selection of a run with a validation split: the
// weights of each peer whose validation Metric was best, from its Epochs
// (1-based, of the last stage) — of the moving average of the weights when
// EMA — and whether early stopping ended the run after StoppedAt epochs.
type Selection struct {
	Metric      string    `json:"metric"` // val_top1, val_top5 or val_loss
	EMA         bool      `json:"ema"`
	Epochs      []int     `json:"epochs"`
	Values      []float64 `json:"values"`
	StoppedAt   int       `json:"stopped_at,omitempty"`
	ValFraction float64   `json:"val_fraction"`
	ValExamples int       `json:"val_examples"`
	// TestedEveryEpoch says the test set was evaluated every epoch too (the
	// epochs' figures); else only once, on the selected weights.
	TestedEveryEpoch bool `json:"tested_every_epoch"`
}

func (r *runner) openMetrics(ck *checkpoint) error {
	if r.cfg.Out == "" || !r.writer() {
		return nil
	}
	if err := os.MkdirAll(r.cfg.Out, 0o755); err != nil {
		return fmt.Errorf("trainer: run directory: %w", err)
	}
	path := filepath.Join(r.cfg.Out, "metrics.jsonl")
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if ck != nil {
		flag = os.O_CREATE | os.O_WRONLY
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return fmt.Errorf("trainer: %w", err)
	}
	if ck != nil {
		// Drop the lines written after the checkpoint. A file shorter
		// than the checkpoint says was cut or replaced since: refuse rather
		// than pad it with zero bytes.
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("trainer: %w", err)
		}
		if want := ck.State.MetricsBytes; fi.Size() < want || want < 0 {
			f.Close()
			return fmt.Errorf("trainer: resume: %s has %d bytes, the checkpoint was written after %d: "+
				"it was cut or replaced since (restore it, or start the run afresh)", path, fi.Size(), want)
		}
		if err := f.Truncate(ck.State.MetricsBytes); err != nil {
			f.Close()
			return fmt.Errorf("trainer: %w", err)
		}
		if _, err := f.Seek(ck.State.MetricsBytes, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("trainer: %w", err)
		}
		r.metricsOff = ck.State.MetricsBytes
	}
	r.metrics = f
	return nil
}

// meanRowEntropy is the mean entropy (nats) of the rows of a C×C target
// matrix; nil (one-hot) has entropy 0. Large matrices are summed in parts
// on every CPU (ImageNet-21k's 477 M logarithms take seconds on one).
func meanRowEntropy(t []float32, c int) float64 {
	if t == nil || c == 0 {
		return 0
	}
	sum := func(part []float32) float64 {
		var h float64
		for _, v := range part {
			if v > 0 {
				h -= float64(v) * math.Log(float64(v))
			}
		}
		return h
	}
	w := runtime.GOMAXPROCS(0)
	if len(t) < 1<<22 || w == 1 {
		return sum(t) / float64(c)
	}
	parts := make([]float64, w)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := len(t)*k/w, len(t)*(k+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[k] = sum(t[lo:hi])
		}()
	}
	wg.Wait()
	var h float64
	for _, x := range parts {
		h += x
	}
	return h / float64(c)
}

// logEpoch appends em to metrics.jsonl (when this process writes one) and
// gives it to the run's sink.
func (r *runner) logEpoch(em EpochMetrics) error {
	if r.metrics != nil {
		b, _ := json.Marshal(em)
		n, err := r.metrics.Write(append(b, '\n'))
		r.metricsOff += int64(n)
		if err != nil {
			return fmt.Errorf("trainer: metrics: %w", err)
		}
	}
	if s := r.sink(); s != nil {
		if err := s.Epoch(em); err != nil {
			return fmt.Errorf("trainer: metrics: %w", err)
		}
	}
	return nil
}

// Observation is the epoch as a planner is told it (curriculum.Observation):
// every peer's figures, or the one model's.
func (m EpochMetrics) Observation() curriculum.Observation {
	peers := m.Peers
	if len(peers) == 0 {
		peers = []PeerMetrics{m.PeerMetrics}
	}
	o := curriculum.Observation{StageIndex: m.StageIndex, Epoch: m.Epoch, LR: m.LR}
	for k, p := range peers {
		pm := curriculum.PeerMetrics{TrainLoss: p.TrainLoss, TrainTop1: p.TrainTop1, TestTop1: p.TestTop1, TestTop5: p.TestTop5,
			TestLoss: p.TestLoss, Untested: !m.Tested()}
		if k < len(m.Val) {
			v := m.Val[k]
			pm.Val = &curriculum.ValMetrics{Top1: v.Top1, Top5: v.Top5, Loss: v.Loss}
		}
		o.Peers = append(o.Peers, pm)
	}
	return o
}
