package strategy

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// OLS is online label smoothing (Zhang et al. 2021, "Delving Deep into
// Label Smoothing"): the soft target of class y in epoch t is the mean
// softmax output of the training examples of class y the model classified
// correctly in epoch t−1, and the loss is α·CE(one-hot) + (1−α)·CE(soft).
// Epoch 0 uses label smoothing's targets, smoothing/(C−1) off the diagonal
// and 1−smoothing on it, as the reference PyTorch implementation
// (online-label-smoothing-pt) initialises them. A class without a correct
// example in the epoch before gets its one-hot row: that implementation
// leaves a zero row there (no soft term at all for the class), which no
// target distribution is; the soft term then equals the hard one.
//
// The statistics come from the trainer (Stage.ClassProbs): the sums of the
// softmax rows by label and the counts, of the stage's model in training
// mode, as each step computed them. Plan is a function of them, so a resumed
// run plans as an uninterrupted one (the trainer keeps them in checkpoints).
type OLS struct {
	base
	alpha, smoothing float64
}

var olsParams = []sdk.Param{
	{Name: "alpha", Type: sdk.ParamFloat, Default: "0.5", Help: "weight α of the hard CE; 1−α weighs the CE against the online soft targets (paper: 0.5)"},
	{Name: "smoothing", Type: sdk.ParamFloat, Default: "0.1", Help: "label smoothing of the first epoch's targets, before any statistics exist"},
}

func (s *OLS) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "ols", Version: Version,
		Summary: "online label smoothing: soft targets from the model's own correct predictions of the epoch before",
		Params:  olsParams, MaxPeers: 1, Stages: []string{"train"}}, nil
}

func (s *OLS) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, olsParams); err != nil {
		return nil, err
	}
	s.alpha, s.smoothing = s.params.Float("alpha"), s.params.Float("smoothing")
	if !(s.alpha >= 0 && s.alpha <= 1) {
		return nil, fmt.Errorf("alpha = %g, want a value in [0,1]", s.alpha)
	}
	if !(s.smoothing >= 0 && s.smoothing < 1) {
		return nil, fmt.Errorf("smoothing = %g, want a value in [0,1)", s.smoothing)
	}
	if len(run.Classes) < 2 {
		return nil, fmt.Errorf("ols needs at least 2 classes, not %d", len(run.Classes))
	}
	s.stages = oneStage("train", run.Epochs, 1)
	s.stages[0].ClassProbs = true
	return s.stagesRead()
}

func (s *OLS) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	c := len(s.run.Classes)
	coefs := sdk.Coefs{HardCE: s.alpha, SoftCE: 1 - s.alpha}
	if at.Epoch == 0 || at.ClassProbSums == nil {
		if at.Epoch > 0 {
			return nil, fmt.Errorf("epoch %d: no class probabilities of the epoch before (the host must send them: Stage.ClassProbs)", at.Epoch)
		}
		off, diag := float32(s.smoothing/float64(c-1)), float32(1-s.smoothing)
		return &sdk.Plan{Coefs: coefs, Targets: sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
			for j := range dst {
				dst[j] = off
			}
			dst[i] = diag
		})}, nil
	}
	sums, counts := at.ClassProbSums, at.ClassCounts
	if len(sums) != c*c || len(counts) != c {
		return nil, fmt.Errorf("epoch %d: class probabilities of %d values and %d counts, want %d×%d and %d", at.Epoch, len(sums), len(counts), c, c, c)
	}
	return &sdk.Plan{Coefs: coefs, Targets: OLSTargets(sums, counts)}, nil
}

// OLSTargets are the targets of online label smoothing from an epoch's
// class probabilities: row y the mean of the softmax rows summed for class
// y (sums: C×C, row = class), renormalised against rounding; one-hot where
// the class counted no example.
func OLSTargets(sums []float64, counts []int64) *sdk.Matrix {
	c := len(counts)
	return sdk.NewRowMatrix(c, c, func(i int, dst []float32) {
		row := sums[i*c : (i+1)*c]
		var total float64
		for _, v := range row {
			total += v
		}
		if counts[i] == 0 || !(total > 0) {
			clear(dst)
			dst[i] = 1
			return
		}
		for j, v := range row {
			dst[j] = float32(v / total)
		}
	})
}
