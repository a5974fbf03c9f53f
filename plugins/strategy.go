package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// Strategy is a running strategy plugin. It implements sdk.Strategy and
// checks every answer: stages from Begin, and every plan against the run's
// classes, examples and the stage's models.
type Strategy struct {
	name string
	c    *conn
	impl sdk.Strategy

	timeout, featuresTimeout time.Duration

	classes, examples int
	stages            []sdk.Stage
}

var _ sdk.Strategy = (*Strategy)(nil)

// Strategy starts the strategy plugin name (built-in or found on the search path).
func (h *Host) Strategy(name string) (*Strategy, error) {
	c, raw, err := h.start(KindStrategy, name)
	if err != nil {
		return nil, err
	}
	impl, ok := raw.(sdk.Strategy)
	if !ok {
		c.kill()
		return nil, fmt.Errorf("%s: does not serve the strategy protocol", c.label)
	}
	return &Strategy{name: name, c: c, impl: impl, timeout: h.timeout(),
		featuresTimeout: orDefault(h.FeaturesTimeout, DefaultFeaturesTimeout)}, nil
}

// Name is the strategy's name as asked for.
func (s *Strategy) Name() string { return s.name }

// Label names the plugin in messages: kind, name and where it comes from.
func (s *Strategy) Label() string { return s.c.label }

// Stages returns what Begin returned.
func (s *Strategy) Stages() []sdk.Stage { return s.stages }

// Close stops the plugin process.
func (s *Strategy) Close() { s.c.kill() }

func (s *Strategy) Describe(ctx context.Context) (sdk.StrategyInfo, error) {
	var info sdk.StrategyInfo
	err := s.c.call(ctx, "Describe", s.timeout, func(ctx context.Context) (err error) {
		info, err = s.impl.Describe(ctx)
		return err
	})
	return info, err
}

func (s *Strategy) Begin(ctx context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if len(run.Labels) != run.NumExamples {
		return nil, fmt.Errorf("%s: Begin: %d labels for %d examples", s.c.label, len(run.Labels), run.NumExamples)
	}
	var stages []sdk.Stage
	err := s.c.call(ctx, "Begin", s.timeout, func(ctx context.Context) (err error) {
		stages, err = s.impl.Begin(ctx, run)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := sdk.ValidateStages(stages); err != nil {
		return nil, s.c.invalid("Begin", "invalid stages: %v", err)
	}
	for i, st := range stages {
		if err := sdk.ValidateLevels(st.Levels, len(run.Classes)); err != nil {
			return nil, s.c.invalid("Begin", "invalid stages: stage %d (%s): %v", i, st.Name, err)
		}
	}
	s.classes, s.examples, s.stages = len(run.Classes), run.NumExamples, stages
	return stages, nil
}

// Plan asks for the plan of a stage's epoch (or step) and checks it. Large
// targets (beyond Host.InlineLimit, 64 MiB by default) are read into the
// memory of the previous large plan's: use them before the next Plan, or
// Clone them.
func (s *Strategy) Plan(ctx context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	op := fmt.Sprintf("Plan(stage %d, epoch %d)", at.Stage, at.Epoch)
	if at.Step > 0 {
		op = fmt.Sprintf("Plan(stage %d, epoch %d, step %d)", at.Stage, at.Epoch, at.Step)
	}
	if s.stages == nil {
		return nil, fmt.Errorf("%s: %s before Begin", s.c.label, op)
	}
	if at.Stage < 0 || at.Stage >= len(s.stages) {
		return nil, fmt.Errorf("%s: %s: the run has %d stages", s.c.label, op, len(s.stages))
	}
	var p *sdk.Plan
	err := s.c.call(ctx, op, s.timeout, func(ctx context.Context) (err error) {
		p, err = s.impl.Plan(ctx, at)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := sdk.ValidatePlan(p, s.classes, s.examples, s.stages[at.Stage].Peers); err != nil {
		return nil, s.c.invalid(op, "invalid plan: %v", err)
	}
	return p, nil
}

func (s *Strategy) Observe(ctx context.Context, m sdk.Metrics) error {
	return s.c.call(ctx, fmt.Sprintf("Observe(stage %d, epoch %d)", m.Stage, m.Epoch), s.timeout,
		func(ctx context.Context) error { return s.impl.Observe(ctx, m) })
}

func (s *Strategy) Features(ctx context.Context, chunks sdk.FeatureStream) error {
	return s.c.call(ctx, "Features", s.featuresTimeout,
		func(ctx context.Context) error { return s.impl.Features(ctx, chunks) })
}
