package strategy

import (
	"context"
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// TargetSumTolerance is how far a row of soft's target matrix may sum
// from 1: loose enough for values typed or printed with a few digits
// (0.333, 0.333, 0.334), tight enough that a similarity matrix (whose
// rows sum to far more) is refused rather than silently normalised. The
// rows are divided by their sums all the same (LCL's v(0)), so the
// deviation never reaches the loss.
const TargetSumTolerance = 1e-3

// MatrixIsTargets says whether the built-in strategy name trains on its
// matrix as the targets themselves (soft), rather than on targets made
// from a similarity: the host then reads --matrix as a target file
// (similarity.ReadTargets) and the file's content keys the run.
func MatrixIsTargets(name string) bool { return name == "soft" }

// Soft trains on a user's C×C target matrix (row y the target of an
// example of class y) as given, or annealed to one-hot by LCL's update
// (LCLStep) with anneal = ε: v(0) = the matrix, each row divided by its
// sum, and v(t) after t epochs as LCL computes it (the same lclTargets).
type Soft struct {
	base
	targets *lclTargets
	eps     float64
}

var softParams = []sdk.Param{
	{Name: "anneal", Type: sdk.ParamFloat, Default: "0",
		Help: "0: train on the matrix as given every epoch; ε in (0,1]: anneal it to one-hot by LCL's update, once per epoch"},
	{Name: "normalize", Type: sdk.ParamBool, Default: "false",
		Help: "divide each row by its sum instead of refusing a row that does not sum to 1 (within 0.001)"},
}

func (s *Soft) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "soft", Version: Version,
		Summary: "soft targets from a C×C matrix file (--matrix), as given or annealed to one-hot by LCL's rule",
		Params:  softParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *Soft) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, softParams); err != nil {
		return nil, err
	}
	s.eps = s.params.Float("anneal")
	if !(s.eps >= 0 && s.eps <= 1) {
		return nil, fmt.Errorf("anneal = %g, want 0 (static) or ε in (0,1]", s.eps)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("soft needs a target matrix (--matrix FILE)")
	}
	if err := CheckTargets(run.Similarity, len(run.Classes), s.params.Bool("normalize")); err != nil {
		return nil, fmt.Errorf("target matrix: %w", err)
	}
	targets, err := newLCLTargets(run.Similarity, len(run.Classes))
	if err != nil {
		return nil, fmt.Errorf("target matrix: %w", err)
	}
	s.targets = targets
	s.stages = oneStage("train", run.Epochs, 1)
	return s.stagesRead()
}

func (s *Soft) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	t := at.Epoch
	if s.eps == 0 {
		t = 0 // static: v(0) every epoch
	}
	return &sdk.Plan{Targets: s.targets.at(s.eps, t), Coefs: sdk.Coefs{SoftCE: 1}}, nil
}

// CheckTargets checks a C×C target matrix: finite values ≥ 0, and every
// row summing to 1 within TargetSumTolerance (with normalize, to more
// than 0). Its errors name the row.
func CheckTargets(m *sdk.Matrix, c int, normalize bool) error {
	if err := sdk.ValidateSimilarity(m, c); err != nil {
		return err
	}
	row := make([]float32, c)
	for i := 0; i < c; i++ {
		sum := 0.0
		for j, v := range m.RowInto(i, row) {
			if v < 0 {
				return fmt.Errorf("row %d, column %d: %g is negative (targets are probabilities)", i, j, v)
			}
			sum += float64(v)
		}
		switch {
		case sum <= 0:
			return fmt.Errorf("row %d sums to 0: no target distribution", i)
		case !normalize && math.Abs(sum-1) > TargetSumTolerance:
			return fmt.Errorf("row %d sums to %.6g, want 1 within %g (or --param normalize=true to divide each row by its sum)", i, sum, TargetSumTolerance)
		}
	}
	return nil
}
