// Command lcl-strategy-annealls is an example third-party strategy: label
// smoothing whose α decays linearly from alpha to 0 over the run, so the
// last epoch trains on one-hot targets.
//
//	go build -o ~/.lcl/plugins/lcl-strategy-annealls ./examples/lcl-strategy-annealls
//	lcl plugins list
package main

import (
	"context"
	"fmt"

	"github.com/lcl-project/lcl/plugins/sdk"
)

func main() { sdk.Serve(sdk.ServeConfig{Strategy: &annealLS{}}) }

var params = []sdk.Param{{Name: "alpha", Type: sdk.ParamFloat, Default: "0.2", Help: "smoothing at the first epoch"}}

// annealLS embeds sdk.Base for Observe and Features, which it does not need.
type annealLS struct {
	sdk.Base
	classes, epochs int
	alpha           float64
}

func (s *annealLS) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "annealls", Version: "0.1.0", Summary: "label smoothing annealed linearly to one-hot",
		Params: params, MaxPeers: 1, Stages: []string{"train"}}, nil
}

func (s *annealLS) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	v, err := sdk.ParseParams(params, run.Params)
	if err != nil {
		return nil, err
	}
	if s.alpha = v.Float("alpha"); s.alpha < 0 || s.alpha > 1 {
		return nil, fmt.Errorf("alpha = %g, want a value in [0,1]", s.alpha)
	}
	if err := v.Err(); err != nil { // a name read that params does not declare
		return nil, err
	}
	s.classes, s.epochs = len(run.Classes), run.Epochs
	return []sdk.Stage{{Name: "train", Epochs: run.Epochs, Peers: 1, Teacher: -1, Fresh: true}}, nil
}

func (s *annealLS) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	a := s.alpha
	if s.epochs > 1 {
		a *= 1 - float64(at.Epoch)/float64(s.epochs-1)
	}
	c := s.classes
	// Rows computed as the SDK sends them: with 21,843 classes the 1.9 GB
	// matrix is never held whole (sdk.NewMatrix and Set work as well).
	off, diag := float32(a/float64(c)), float32(1-a+a/float64(c))
	t := sdk.NewRowMatrix(c, c, func(i int, row []float32) {
		for j := range row {
			row[j] = off
		}
		row[i] = diag
	})
	return &sdk.Plan{Targets: t, Coefs: sdk.Coefs{SoftCE: 1}}, nil
}
