package strategy

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// haframeNumpy is HAFrame's construction (ltong1130ztr/HAFrame,
// HAFrame/solve_HAF.py: the exponential-decay map and the search of the
// minimum similarity), written from its description with numpy's eigh, on
// the single-linkage cophenetic distances of D (scipy's): it prints s_min
// and S for the distances and γ given.
const haframeNumpy = `
import json, sys
import numpy as np
from scipy.cluster.hierarchy import cophenet, linkage
from scipy.spatial.distance import squareform
d = json.loads(sys.argv[1]); D = np.array(d["D"]); gamma = d["gamma"]; C = D.shape[0]
D = squareform(cophenet(linkage(squareform(D, checks=False), method="single")))
def S_of(smin): return (1 - smin) * np.exp(-gamma * D / D.max()) + smin
best = float("inf")
for s in np.linspace(-1.0 / (C - 1), -1.0, 100):
    w = np.linalg.eigvalsh(S_of(s)); w[np.abs(w) < 1e-6] = 0
    if w.min() >= 0: best = min(best, s)
print(json.dumps({"smin": best, "S": S_of(best).tolist()}))
`

// TestHAFrameMatchesTheirConstruction: on the LCA heights of mbmTaxonomy
// (a tree: its distances are their own single-linkage distances) and on
// distances of no tree (random ones), s_min and S are numpy's of the
// published construction, and the plan's class vectors have S as their
// Gram matrix (their cosines, with unit norms).
func TestHAFrameMatchesTheirConstruction(t *testing.T) {
	py := testdep.PythonModules(t, "numpy", "scipy")
	t.Run("tree", func(t *testing.T) { checkHAFrameConstruction(t, py, lcaHeightMatrix(t, mbmLeaves), len(mbmLeaves)) })
	t.Run("no tree", func(t *testing.T) { checkHAFrameConstruction(t, py, symmetricRandomSimilarity(9, 7), 9) })
}

// symmetricRandomSimilarity is a symmetric c×c similarity with a unit diagonal and
// uniform off-diagonal values in [0, 1): distances of no tree.
func symmetricRandomSimilarity(c int, seed uint64) *sdk.Matrix {
	r := rand.New(rand.NewPCG(seed, 1))
	m := sdk.NewMatrix(c, c)
	for i := range c {
		m.Data[i*c+i] = 1
		for j := i + 1; j < c; j++ {
			v := float32(r.Float64())
			m.Data[i*c+j], m.Data[j*c+i] = v, v
		}
	}
	return m
}

func checkHAFrameConstruction(t *testing.T, py *testdep.Py, sim *sdk.Matrix, c int) {
	D := make([][]float64, c)
	for i := range D {
		D[i] = make([]float64, c)
		for j := range D[i] {
			if i != j {
				D[i][j] = 1 - float64(sim.At(i, j))
			}
		}
	}
	for _, gamma := range []float64{2, 5, 0.5} {
		arg, _ := json.Marshal(map[string]any{"D": D, "gamma": gamma})
		var ref struct {
			Smin float64
			S    [][]float64
		}
		if err := json.Unmarshal([]byte(py.Run(haframeNumpy, string(arg))), &ref); err != nil {
			t.Fatal(err)
		}
		S, smin, err := HAFrameSimilarity(Subdominant(distances(sim, c)), gamma)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(smin-ref.Smin) > 1e-12 {
			t.Errorf("gamma %g: s_min %.15g, numpy %.15g", gamma, smin, ref.Smin)
		}
		st, err := beginToy("haframe", sim, c, map[string]string{"haf-gamma": strconv.FormatFloat(gamma, 'g', -1, 64)})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := st.Plan(context.Background(), sdk.PlanAt{})
		if err != nil {
			t.Fatal(err)
		}
		V := plan.Classifier.Dense()
		if V.Rows != c || V.Cols != c {
			t.Fatalf("classifier %d×%d, want %d×%d", V.Rows, V.Cols, c, c)
		}
		for i := range c {
			for j := range c {
				if math.Abs(S.At(i, j)-ref.S[i][j]) > 1e-12 {
					t.Errorf("gamma %g: S[%d][%d] = %.15g, numpy %.15g", gamma, i, j, S.At(i, j), ref.S[i][j])
				}
				g := 0.0
				for k := range c {
					g += float64(V.Data[i*c+k]) * float64(V.Data[j*c+k])
				}
				if math.Abs(g-ref.S[i][j]) > 1e-6 {
					t.Errorf("gamma %g: (V·Vᵀ)[%d][%d] = %.9g, S %.9g", gamma, i, j, g, ref.S[i][j])
				}
			}
		}
	}
}

// The plan's coefficients: β = 1 − α up to α = 1, then β = 1 (their
// mixing_ratio_scheduler's constant schedule); bad parameters are refused
// naming the parameter and the range.
func TestHAFramePlanAndRefusals(t *testing.T) {
	sim := lcaHeightMatrix(t, mbmLeaves)
	c := len(mbmLeaves)
	for _, tc := range []struct {
		params map[string]string
		want   sdk.Coefs
	}{
		{nil, sdk.Coefs{HardCE: 0.6, Cosine: 0.4}},
		{map[string]string{"alpha": "1"}, sdk.Coefs{HardCE: 0, Cosine: 1}},
		{map[string]string{"alpha": "2.5"}, sdk.Coefs{HardCE: 1, Cosine: 2.5}},
		{map[string]string{"alpha": "0"}, sdk.Coefs{HardCE: 1}},
	} {
		st, err := beginToy("haframe", sim, c, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := st.Plan(context.Background(), sdk.PlanAt{Epoch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(plan.Coefs.HardCE-tc.want.HardCE) > 1e-15 || plan.Coefs.Cosine != tc.want.Cosine ||
			plan.Coefs.SoftCE != 0 || plan.Targets != nil || plan.Classifier == nil {
			t.Errorf("%v: coefs %+v (classifier %v), want %+v and a classifier", tc.params, plan.Coefs, plan.Classifier != nil, tc.want)
		}
		if err := sdk.ValidatePlan(plan, c, c, 1); err != nil {
			t.Errorf("%v: the host refuses the plan: %v", tc.params, err)
		}
	}
	flat := sdk.NewMatrix(3, 3)
	for i := range flat.Data {
		flat.Data[i] = 1
	}
	for _, tc := range []struct {
		sim    *sdk.Matrix
		c      int
		params map[string]string
		want   string
	}{
		{sim, c, map[string]string{"alpha": "-0.1"}, "alpha = -0.1, want a finite value ≥ 0"},
		{sim, c, map[string]string{"alpha": "NaN"}, "alpha"},
		{sim, c, map[string]string{"haf-gamma": "0"}, "haf-gamma = 0, want a finite value > 0"},
		{sim, c, map[string]string{"haf-gamma": "-2"}, "haf-gamma = -2"},
		{sim, c, map[string]string{"haf-gamma": "+Inf"}, "haf-gamma"},
		{nil, c, nil, "haframe needs a similarity matrix"},
		{flat, 3, nil, "every pair of classes is at distance 0"},
	} {
		if _, err := beginToy("haframe", tc.sim, tc.c, tc.params); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.params, err, tc.want)
		}
	}
}
