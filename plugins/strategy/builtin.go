package strategy

import (
	"context"
	"fmt"
	"sort"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// Version is the built-in strategies' version, reported by Describe.
const Version = "1.0.0"

// builtins is the one list of the built-in strategies: name → constructor.
func builtins() map[string]func() sdk.Strategy {
	return map[string]func() sdk.Strategy{
		"sl":       func() sdk.Strategy { return &SL{} },
		"ls":       func() sdk.Strategy { return &LS{} },
		"lcl":      func() sdk.Strategy { return &LCL{} },
		"kd":       func() sdk.Strategy { return &KD{} },
		"dml":      func() sdk.Strategy { return &DML{} },
		"cn":       func() sdk.Strategy { return &CN{} },
		"mbm-soft": func() sdk.Strategy { return &MBMSoft{} },
		"ols":      func() sdk.Strategy { return &OLS{} },
		"hxe":      func() sdk.Strategy { return &HXE{} },
		"soft":     func() sdk.Strategy { return &Soft{} },
		"haframe":  func() sdk.Strategy { return &HAFrame{} },
		"haf":      func() sdk.Strategy { return &HAF{} },
	}
}

// New returns a fresh built-in strategy by name, or false.
func New(name string) (sdk.Strategy, bool) {
	mk, ok := builtins()[name]
	if !ok {
		return nil, false
	}
	return mk(), true
}

// Names lists the built-in strategies, sorted.
func Names() []string {
	var n []string
	for name := range builtins() {
		n = append(n, name)
	}
	sort.Strings(n)
	return n
}

// base holds what every built-in keeps from Begin; sdk.Base answers
// Observe and Features.
type base struct {
	sdk.Base
	run    sdk.Run
	params *sdk.Values
	stages []sdk.Stage
}

func (b *base) begin(run sdk.Run, specs []sdk.Param) error {
	if len(run.Classes) == 0 {
		return fmt.Errorf("no classes")
	}
	if run.Epochs < 1 {
		return fmt.Errorf("epochs = %d, want ≥ 1", run.Epochs)
	}
	if len(run.Labels) != run.NumExamples {
		return fmt.Errorf("%d labels for %d examples", len(run.Labels), run.NumExamples)
	}
	for i, y := range run.Labels {
		if y < 0 || y >= len(run.Classes) {
			return fmt.Errorf("label of example %d is %d, want a class index in [0,%d)", i, y, len(run.Classes))
		}
	}
	v, err := sdk.ParseParams(specs, run.Params)
	if err != nil {
		return err
	}
	b.run, b.params = run, v
	return nil
}

func (b *base) check(at sdk.PlanAt) error {
	if b.params == nil {
		return fmt.Errorf("plan asked before begin")
	}
	if at.Stage < 0 || at.Stage >= len(b.stages) {
		return fmt.Errorf("stage %d: this run has %d stages", at.Stage, len(b.stages))
	}
	if at.Epoch < 0 || at.Epoch >= b.stages[at.Stage].Epochs {
		return fmt.Errorf("epoch %d of stage %d: the stage has %d epochs", at.Epoch, at.Stage, b.stages[at.Stage].Epochs)
	}
	return nil
}

// stagesRead returns the stages Begin made, or the error of a parameter
// name read but not declared (see sdk.Values.Err).
func (b *base) stagesRead() ([]sdk.Stage, error) {
	if err := b.params.Err(); err != nil {
		return nil, err
	}
	return b.stages, nil
}

func oneStage(name string, epochs, peers int) []sdk.Stage {
	return []sdk.Stage{{Name: name, Epochs: epochs, Peers: peers, Teacher: -1, Fresh: true}}
}

// SL is standard learning: cross-entropy against one-hot targets.
type SL struct{ base }

func (s *SL) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "sl", Version: Version, Summary: "standard learning: CE against one-hot targets",
		MaxPeers: 1, Stages: []string{"train"}}, nil
}

func (s *SL) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, nil); err != nil {
		return nil, err
	}
	s.stages = oneStage("train", run.Epochs, 1)
	return s.stagesRead()
}

func (s *SL) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1}}, nil
}

// LS is label smoothing: targets (1−α)·onehot + α/C, α = 0.1.
type LS struct {
	base
	targets *sdk.Matrix
}

var lsParams = []sdk.Param{{Name: "alpha", Type: sdk.ParamFloat, Default: "0.1", Help: "smoothing mass α spread uniformly over all C classes"}}

func (s *LS) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "ls", Version: Version, Summary: "label smoothing: CE against (1−α)·onehot + α/C",
		Params: lsParams, MaxPeers: 1, Stages: []string{"train"}}, nil
}

func (s *LS) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, lsParams); err != nil {
		return nil, err
	}
	a := s.params.Float("alpha")
	if a < 0 || a > 1 {
		return nil, fmt.Errorf("alpha = %g, want a value in [0,1]", a)
	}
	s.targets = Smoothed(len(run.Classes), a)
	s.stages = oneStage("train", run.Epochs, 1)
	return s.stagesRead()
}

func (s *LS) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Targets: s.targets, Coefs: sdk.Coefs{SoftCE: 1}}, nil
}

// LCL is label-similarity curriculum learning (Dogan et al. 2020): targets
// v(0) = s(c,·)/Σ_k s(c,k), then at epoch t ≥ 1 the paper's update applied t
// times to the normalised matrix (see LCLStep). With per-step on, the update
// is applied once per optimiser step instead (t = epoch·steps + step).
type LCL struct {
	base
	targets *lclTargets
	eps     float64
}

var lclParams = []sdk.Param{
	{Name: "epsilon", Type: sdk.ParamFloat, Default: "0.99", Help: "decay ε in (0,1] of the off-target mass per update (paper: 0.9, 0.99, 0.999)"},
	{Name: "per-step", Type: sdk.ParamBool, Default: "false", Help: "apply the update every optimiser step instead of every epoch"},
	{Name: "clip-negative", Type: sdk.ParamBool, Default: "false", Help: "set negative similarities to 0 instead of failing"},
}

func (s *LCL) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "lcl", Version: Version,
		Summary: "label-similarity curriculum: soft targets from class similarity, annealed to one-hot",
		Params:  lclParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *LCL) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, lclParams); err != nil {
		return nil, err
	}
	c := len(run.Classes)
	s.eps = s.params.Float("epsilon")
	if !(s.eps > 0 && s.eps <= 1) {
		return nil, fmt.Errorf("epsilon = %g, want a value in (0,1]", s.eps)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("lcl needs a similarity matrix (--source or --matrix)")
	}
	sim := run.Similarity
	if s.params.Bool("clip-negative") && hasNegative(sim) {
		// A copy: the run's matrix may be the host's (a 21,843-class one is
		// only copied when it has something to clip).
		sim = sim.Clone()
		for i, v := range sim.Data {
			sim.Data[i] = max(v, 0)
		}
	}
	targets, err := newLCLTargets(sim, c)
	if err != nil {
		return nil, fmt.Errorf("similarity matrix: %w", err)
	}
	s.targets = targets
	s.stages = oneStage("train", run.Epochs, 1)
	if s.params.Bool("per-step") {
		if run.StepsPerEpoch < 1 {
			return nil, fmt.Errorf("per-step needs the number of steps per epoch, which the host did not give")
		}
		s.stages[0].PerStep = true
	}
	return s.stagesRead()
}

func (s *LCL) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	t := at.Epoch
	if s.stages[0].PerStep {
		if at.Step < 0 || at.Step >= s.run.StepsPerEpoch {
			return nil, fmt.Errorf("step %d: an epoch has %d steps", at.Step, s.run.StepsPerEpoch)
		}
		t = at.Epoch*s.run.StepsPerEpoch + at.Step
	}
	return &sdk.Plan{Targets: s.targets.at(s.eps, t), Coefs: sdk.Coefs{SoftCE: 1}}, nil
}

// hasNegative reports whether m has a value below 0.
func hasNegative(m *sdk.Matrix) bool {
	row := make([]float32, m.Cols)
	for i := 0; i < m.Rows; i++ {
		for _, v := range m.RowInto(i, row) {
			if v < 0 {
				return true
			}
		}
	}
	return false
}

// KD is knowledge distillation (Hinton et al. 2015): stage "teacher" trains
// a teacher with sl; stage "student" trains a fresh student on
// (1−α)·CE(y) + α·T²·KL(softmax(t/T) ‖ softmax(s/T)).
type KD struct {
	base
	alpha, temperature float64
}

var kdParams = []sdk.Param{
	{Name: "alpha", Type: sdk.ParamFloat, Default: "0.9", Help: "weight α of the distillation term"},
	{Name: "temperature", Type: sdk.ParamFloat, Default: "4", Help: "softmax temperature T"},
	{Name: "teacher-model", Type: sdk.ParamString, Default: "", Help: "teacher architecture (default: the run's model)"},
	{Name: "teacher-epochs", Type: sdk.ParamInt, Default: "0", Help: "teacher epochs (0: as many as the run)"},
}

func (s *KD) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "kd", Version: Version,
		Summary: "knowledge distillation: teacher with sl, then student on (1−α)·CE + α·T²·KL",
		Params:  kdParams, MaxPeers: 1, Stages: []string{"teacher", "student"}}, nil
}

func (s *KD) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, kdParams); err != nil {
		return nil, err
	}
	a, T := s.params.Float("alpha"), s.params.Float("temperature")
	if a < 0 || a > 1 {
		return nil, fmt.Errorf("alpha = %g, want a value in [0,1]", a)
	}
	if T <= 0 {
		return nil, fmt.Errorf("temperature = %g, want > 0", T)
	}
	te := s.params.Int("teacher-epochs")
	if te < 0 {
		return nil, fmt.Errorf("teacher-epochs = %d, want ≥ 0", te)
	}
	if te == 0 {
		te = run.Epochs
	}
	s.alpha, s.temperature = a, T
	s.stages = []sdk.Stage{
		{Name: "teacher", Epochs: te, Peers: 1, Teacher: -1, Fresh: true, Model: s.params.String("teacher-model")},
		{Name: "student", Epochs: run.Epochs, Peers: 1, Teacher: 0, Fresh: true},
	}
	return s.stagesRead()
}

func (s *KD) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	if at.Stage == 0 {
		return &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1}}, nil
	}
	return &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1 - s.alpha, KD: s.alpha, KDTemperature: s.temperature}}, nil
}

// DML is deep mutual learning (Zhang et al. 2018): two peers trained
// together, each on CE + KL(p_peer ‖ p_self) with the peer held constant.
type DML struct {
	base
	mutual float64
}

var dmlParams = []sdk.Param{
	{Name: "peers", Type: sdk.ParamInt, Default: "2", Help: "number of peers trained together"},
	{Name: "mutual", Type: sdk.ParamFloat, Default: "1", Help: "weight of each KL(p_peer ‖ p_self) term"},
}

func (s *DML) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "dml", Version: Version,
		Summary: "deep mutual learning: peers each on CE + KL(p_peer ‖ p_self)",
		Params:  dmlParams, MaxPeers: 2, Stages: []string{"peers"}}, nil
}

func (s *DML) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, dmlParams); err != nil {
		return nil, err
	}
	k := s.params.Int("peers")
	if k < 2 {
		return nil, fmt.Errorf("peers = %d, want ≥ 2", k)
	}
	if s.mutual = s.params.Float("mutual"); s.mutual < 0 {
		return nil, fmt.Errorf("mutual = %g, want ≥ 0", s.mutual)
	}
	s.stages = oneStage("peers", run.Epochs, k)
	return s.stagesRead()
}

func (s *DML) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Coefs: sdk.Coefs{SoftCE: 1, Mutual: s.mutual}}, nil
}
