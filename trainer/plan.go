package trainer

import (
	"fmt"

	"github.com/lcl-project/lcl/curriculum"
)

// The planning contract between a strategy and the trainer is package
// curriculum's (it sits below the trainer); the trainer names it here.
type (
	// Stage is one phase of a run (curriculum.Stage).
	Stage = curriculum.Stage
	// Plan is what a Planner decides for one epoch (curriculum.Plan).
	Plan = curriculum.Plan
	// Coefs weighs the loss terms of a Plan; the step passes it to the
	// binding as torch.Coefs, which has the same fields.
	Coefs = curriculum.Coefs
	// PlanContext tells the planner where the run stands (curriculum.PlanContext).
	PlanContext = curriculum.PlanContext
	// Planner decides each epoch's plan (curriculum.Planner).
	Planner = curriculum.Planner
	// StatefulPlanner is a Planner whose state goes into checkpoints.
	StatefulPlanner = curriculum.StatefulPlanner
)

// validatePlan checks a plan against the run and fills in default coefficients.
func validatePlan(p *Plan, numClasses, numExamples int) error {
	if p.Targets != nil && len(p.Targets) != numClasses*numClasses {
		return fmt.Errorf("plan: target matrix has %d values, want %d×%d", len(p.Targets), numClasses, numClasses)
	}
	if p.Weights != nil && len(p.Weights) != numExamples {
		return fmt.Errorf("plan: %d weights for %d training examples", len(p.Weights), numExamples)
	}
	for _, i := range p.Subset {
		if i < 0 || i >= numExamples {
			return fmt.Errorf("plan: subset index %d outside [0,%d)", i, numExamples)
		}
	}
	if p.Coefs == (Coefs{}) {
		p.Coefs.SoftCE = 1
	}
	if p.Coefs.KD != 0 && p.Coefs.KDTemperature <= 0 {
		p.Coefs.KDTemperature = 1
	}
	return nil
}
