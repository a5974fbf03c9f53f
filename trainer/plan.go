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
	// Coefs weighs the loss terms of a Plan (internal/coefs; torch.Coefs
	// is the same type).
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
	if g := p.Groups; g != nil {
		if err := validateGroups(g, numClasses); err != nil {
			return fmt.Errorf("plan: class groups: %w", err)
		}
	}
	if p.Classifier != nil && (p.ClassifierDim < 1 || len(p.Classifier) != numClasses*p.ClassifierDim) {
		return fmt.Errorf("plan: fixed classifier has %d values, want %d rows of %d", len(p.Classifier), numClasses,
			p.ClassifierDim)
	}
	if p.Coefs.Cosine != 0 && p.Classifier == nil {
		return fmt.Errorf("plan: cosine coefficient %g without a fixed classifier", p.Coefs.Cosine)
	}
	if p.Coefs.Group != 0 && p.Groups == nil {
		return fmt.Errorf("plan: group coefficient %g without class groups", p.Coefs.Group)
	}
	if p.Coefs == (Coefs{}) {
		p.Coefs.SoftCE = 1
	}
	if p.Coefs.KD != 0 && p.Coefs.KDTemperature <= 0 {
		p.Coefs.KDTemperature = 1
	}
	return nil
}

// validateGroups checks the indices of class groups for numClasses classes
// (a planner in this process may skip the plugin host's full check).
func validateGroups(g *curriculum.Groups, numClasses int) error {
	G := len(g.Members)
	if G == 0 || int64(G)*int64(numClasses) > curriculum.MaxGroupCells {
		return fmt.Errorf("%d groups of %d classes, want 1 to %d cells", G, numClasses, curriculum.MaxGroupCells)
	}
	for gi, m := range g.Members {
		for _, c := range m {
			if c < 0 || int(c) >= numClasses {
				return fmt.Errorf("group %d lists class %d, want one in [0,%d)", gi, c, numClasses)
			}
		}
	}
	for _, w := range g.Weights {
		if w.Class < 0 || int(w.Class) >= numClasses || w.Group < 0 || int(w.Group) >= G {
			return fmt.Errorf("weight at class %d, group %d, want a class in [0,%d) and a group in [0,%d)", w.Class, w.Group, numClasses, G)
		}
	}
	return nil
}
