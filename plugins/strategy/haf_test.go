package strategy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// caterpillar is a similarity over c classes whose single-linkage tree adds
// one class at a time: class j joins classes 0..j−1 at distance j/c, so its
// levels have c−1, c−2, …, 2 groups.
func caterpillar(c int) *sdk.Matrix {
	m := sdk.NewMatrix(c, c)
	for i := range c {
		for j := range c {
			m.Data[i*c+j] = 1 - float32(max(i, j))/float32(c)
		}
		m.Data[i*c+i] = 1
	}
	return m
}

func groupCounts(ls []sdk.Level) []int {
	var out []int
	for _, l := range ls {
		out = append(out, l.Groups)
	}
	return out
}

// TestHAFLevels: the levels of hand-made trees are their partitions below
// the root, fine to coarse, groups numbered by their first class; with a
// cap, evenly spaced ones with the finest and the coarsest; every group of
// several classes is a node of the tree hxe walks (LinkageTree), and the
// host's check (nested, every group used) accepts them.
func TestHAFLevels(t *testing.T) {
	sim := lcaHeightMatrix(t, mbmLeaves) // dog cat bird car bike rock
	got, err := HAFLevels(sim, 6, 11)
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Level{
		{Groups: 4, Group: []int{0, 0, 1, 2, 2, 3}}, // mammal, bird, vehicle, rock (height 1)
		{Groups: 3, Group: []int{0, 0, 0, 1, 1, 2}}, // animal, vehicle, rock (height 2)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("levels of the toy taxonomy %v, want %v", got, want)
	}
	checkLevelsAreTreeNodes(t, sim, 6, got)

	cat := caterpillar(6)
	for _, tc := range []struct {
		most int
		want []int
	}{{11, []int{5, 4, 3, 2}}, {4, []int{5, 4, 3, 2}}, {3, []int{5, 3, 2}}, {2, []int{5, 2}}, {1, []int{5}}} {
		ls, err := HAFLevels(cat, 6, tc.most)
		if err != nil {
			t.Fatal(err)
		}
		if g := groupCounts(ls); !slices.Equal(g, tc.want) {
			t.Errorf("caterpillar, at most %d levels: groups %v, want %v", tc.most, g, tc.want)
		}
		checkLevelsAreTreeNodes(t, cat, 6, ls)
	}
	// Ties: classes at distance 0 (similarity 1) share a group from the
	// first level on; a flat matrix has no level.
	flat := sdk.NewMatrix(4, 4)
	for i := range flat.Data {
		flat.Data[i] = 0.5
	}
	for i := range 4 {
		flat.Data[i*4+i] = 1
	}
	if ls, err := HAFLevels(flat, 4, 11); err != nil || len(ls) != 0 {
		t.Errorf("flat similarity: levels %v, %v, want none", ls, err)
	}
}

func checkLevelsAreTreeNodes(t *testing.T, sim *sdk.Matrix, c int, ls []sdk.Level) {
	t.Helper()
	if err := sdk.ValidateLevels(ls, c); err != nil {
		t.Errorf("the host refuses the levels: %v", err)
	}
	tree, err := LinkageTree(sim, c)
	if err != nil {
		t.Fatal(err)
	}
	for l, lv := range ls {
		for g := range lv.Groups {
			var members []int
			for k, x := range lv.Group {
				if x == g {
					members = append(members, k)
				}
			}
			if len(members) > 1 && !slices.ContainsFunc(tree.Members, func(m []int) bool { return slices.Equal(m, members) }) {
				t.Errorf("level %d group %d %v is no node of the linkage tree", l, g, members)
			}
		}
	}
}

// The plan is CE plus the three weights; the stage carries the levels;
// bad parameters and a matrix without a hierarchy are refused, naming what
// was wrong.
func TestHAFPlanAndRefusals(t *testing.T) {
	sim := lcaHeightMatrix(t, mbmLeaves)
	st, err := beginToy("haf", sim, 6, map[string]string{"consistency": "0.5", "geometric": "0", "levels": "1"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := st.Plan(context.Background(), sdk.PlanAt{Epoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (sdk.Coefs{HardCE: 1, Consistency: 0.5, Dissimilar: 1}); plan.Coefs != want || plan.Targets != nil {
		t.Errorf("plan coefs %+v, want %+v and no targets", plan.Coefs, want)
	}
	if err := sdk.ValidatePlan(plan, 6, 6, 1); err != nil {
		t.Errorf("the host refuses the plan: %v", err)
	}
	h := st.(*HAF)
	if ls := h.stages[0].Levels; len(ls) != 1 || ls[0].Groups != 4 {
		t.Errorf("levels=1: stage levels %v, want the finest (4 groups)", ls)
	}
	for _, tc := range []struct {
		sim    *sdk.Matrix
		params map[string]string
		want   string
	}{
		{sim, map[string]string{"consistency": "-1"}, "consistency = -1, want a finite value ≥ 0"},
		{sim, map[string]string{"dissimilar": "NaN"}, "dissimilar"},
		{sim, map[string]string{"geometric": "+Inf"}, "geometric"},
		{sim, map[string]string{"levels": "0"}, "levels = 0, want 1 to 64"},
		{sim, map[string]string{"levels": "x"}, "levels"},
		{sim, map[string]string{"margin": "2"}, "margin"},
		{nil, nil, "haf needs a similarity matrix"},
		{caterpillar(6), nil, ""},
	} {
		_, err := beginToy("haf", tc.sim, 6, tc.params)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.params, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.params, err, tc.want)
		}
	}
	flat := sdk.NewMatrix(3, 3)
	for i := range flat.Data {
		flat.Data[i] = 0.2
	}
	for i := range 3 {
		flat.Data[i*3+i] = 1
	}
	if _, err := beginToy("haf", flat, 3, nil); err == nil || !strings.Contains(err.Error(), "haf needs a hierarchy") {
		t.Errorf("flat similarity: %v, want haf needs a hierarchy", err)
	}
}
