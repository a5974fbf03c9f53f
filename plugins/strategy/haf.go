package strategy

import (
	"context"
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// HAF is "Learning Hierarchy Aware Features for Reducing Mistake Severity"
// (Garg, Sani, Anand, ECCV 2022; code 07Agarg/HAF, the loss of
// ResNet18_ours_l7_cejsd_wtconst_dissim). Next to the model's own head
// (level 0, the classes) every model of the stage gets one trainable
// linear head per coarser level of the class hierarchy, on the head's input
// features f, with logits f·ŵ_lᵀ + b_l (ŵ_l the unit weight rows). The loss
// is
//
//	CE(onehot(y), p_0) + consistency·Σ_{l≥1} JSD(p_{l−1} summed into level l's groups, p_l)
//	+ dissimilar·Σ_{1≤l<L} mean over pairs a, b of different level-l groups of (3 − JSD(p_l[a], p_l[b]))
//	− geometric·Σ_{l≥1} mean_g cos(ŵ_l[g], Σ_{children h of g} ŵ_{l−1}[h])
//
// (the engine's level terms: internal/coefs). The levels are the cuts of
// the single-linkage tree hxe walks at each distance where it merges
// clusters (HAFLevels), smallest first: nested partitions, fine to coarse,
// without the all-in-one one (its softmax is constant).
//
// Where lcl differs from their code: the model's own head stays a plain
// linear layer (theirs normalises its rows too; lcl's evaluation, weights
// files and every other strategy use the plain head), and the pairs of the
// dissimilarity term are consecutive examples of the batch as it comes
// (already shuffled) whose level-l groups differ, each once, averaged
// (theirs shuffles again with Python's random, outside the run's seeding,
// and cycles through the pairs until it has 256): no second random draw.
type HAF struct {
	base
	coefs sdk.Coefs
}

// hafMaxLevels is the default cap on the coarse levels kept: their deepest
// setup (tieredImageNet) has 11 above the classes.
const hafMaxLevels = 11

var hafParams = []sdk.Param{
	{Name: "levels", Type: sdk.ParamInt, Default: fmt.Sprint(hafMaxLevels), Help: "most coarse levels kept (≥ 1); beyond it, evenly spaced ones of the hierarchy's, the finest and the coarsest included (paper: 6 on iNat-19, 11 on tieredImageNet)"},
	{Name: "consistency", Type: sdk.ParamFloat, Default: "1", Help: "weight ≥ 0 of the Jensen–Shannon consistency of each level's head with the level below summed into its groups (paper: 1)"},
	{Name: "dissimilar", Type: sdk.ParamFloat, Default: "1", Help: "weight ≥ 0 of the margin term (margin 3) pushing apart the level predictions of consecutive examples of different groups (paper: 1)"},
	{Name: "geometric", Type: sdk.ParamFloat, Default: "1", Help: "weight ≥ 0 of the cosine of each level's weight rows with the sums of their children's, subtracted (paper: 1)"},
}

func (s *HAF) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "haf", Version: Version,
		Summary: "HAF (Garg et al. 2022): CE + a head per hierarchy level, Jensen–Shannon consistency, margin and weight-geometry terms",
		Params:  hafParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *HAF) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, hafParams); err != nil {
		return nil, err
	}
	co := sdk.Coefs{HardCE: 1}
	for _, w := range []struct {
		name string
		to   *float64
	}{{"consistency", &co.Consistency}, {"dissimilar", &co.Dissimilar}, {"geometric", &co.Geometric}} {
		v := s.params.Float(w.name)
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("%s = %g, want a finite value ≥ 0", w.name, v)
		}
		*w.to = v
	}
	most := s.params.Int("levels")
	if most < 1 || most > sdk.MaxLevels {
		return nil, fmt.Errorf("levels = %d, want 1 to %d", most, sdk.MaxLevels)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("haf needs a similarity matrix whose hierarchy gives its levels (--source lca --form height, or --matrix)")
	}
	c := len(run.Classes)
	levels, err := HAFLevels(run.Similarity, c, most)
	if err != nil {
		return nil, fmt.Errorf("similarity matrix: %w", err)
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("haf needs a hierarchy: the similarity's single-linkage tree joins all %d classes at one distance, so there is no level between the classes and their root", c)
	}
	s.coefs = co
	s.stages = oneStage("train", run.Epochs, 1)
	s.stages[0].Levels = levels
	return s.stagesRead()
}

func (s *HAF) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	return &sdk.Plan{Coefs: s.coefs}, nil
}

// HAFLevels are the levels of the similarity s over c classes: the
// partitions of the classes the single-linkage tree of d = 1 − s (the one
// LinkageTree builds) has after each distance at which it merges clusters,
// smallest first — nested, each coarser than the one before — without the
// last (one group: no level). Groups are numbered in the order of their
// first class. With more than most levels, most evenly spaced ones are
// kept, the finest and the coarsest among them (most = 1: the finest).
func HAFLevels(s *sdk.Matrix, c, most int) ([]sdk.Level, error) {
	if err := sdk.ValidateSimilarity(s, c); err != nil {
		return nil, err
	}
	if most < 1 {
		return nil, fmt.Errorf("at most %d levels, want at least 1", most)
	}
	uf := newUnionFind(c)
	var all []sdk.Level
	for _, round := range mergeRounds(spanningEdges(s, c)) {
		uf.join(round)
		lv := sdk.Level{Group: make([]int, c)}
		id := map[int]int{} // cluster root → group
		for k := range c {
			r := uf.find(k)
			g, ok := id[r]
			if !ok {
				g = len(id)
				id[r] = g
			}
			lv.Group[k] = g
		}
		if lv.Groups = len(id); lv.Groups >= 2 {
			all = append(all, lv)
		}
	}
	return spaced(all, most), nil
}

// spaced keeps at most k of the levels, evenly spaced over them with the
// first and the last (k = 1: the first); any subset of nested levels is
// nested.
func spaced(levels []sdk.Level, k int) []sdk.Level {
	n := len(levels)
	if n <= k {
		return levels
	}
	if k == 1 {
		return levels[:1]
	}
	out := make([]sdk.Level, k)
	for i := range out {
		out[i] = levels[int(math.Round(float64(i*(n-1))/float64(k-1)))]
	}
	return out
}
