package strategy

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// softMatrix is a 3-class target matrix whose rows sum to 1 within the
// tolerance but not exactly (the third: 0.9995).
var softMatrix = []float32{0.7, 0.2, 0.1, 0.25, 0.5, 0.25, 0.0995, 0.4, 0.5}

// softBegin begins soft on m (C = 3, one example per class) with params.
func softBegin(t *testing.T, m []float32, params map[string]string) (*Soft, error) {
	t.Helper()
	s := &Soft{}
	classes := []sdk.Class{{Index: 0, ID: "a"}, {Index: 1, ID: "b"}, {Index: 2, ID: "c"}}
	_, err := s.Begin(context.Background(), sdk.Run{Classes: classes, Similarity: &sdk.Matrix{Rows: 3, Cols: 3, Data: m},
		NumExamples: 3, Labels: []int{0, 1, 2}, Epochs: 4, Params: params})
	return s, err
}

func softPlan(t *testing.T, s *Soft, epoch int) [][]float64 {
	t.Helper()
	p, err := s.Plan(context.Background(), sdk.PlanAt{Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.ValidatePlan(p, 3, 3, 1); err != nil {
		t.Fatalf("epoch %d: %v", epoch, err)
	}
	if p.Coefs != (sdk.Coefs{SoftCE: 1}) {
		t.Fatalf("coefficients %+v, want soft CE only", p.Coefs)
	}
	var rows [][]float64
	for i := range 3 {
		var r []float64
		for _, x := range p.Targets.Row(i) {
			r = append(r, float64(x))
		}
		rows = append(rows, r)
	}
	return rows
}

// TestSoftPlans: static, the matrix's rows divided by their sums every
// epoch; annealed, t literal applications of LCL's update (LCLStep) to
// them at epoch t.
func TestSoftPlans(t *testing.T) {
	v0 := LCLInitial(&Matrix64{N: 3, Data: []float64{0.7, 0.2, 0.1, 0.25, 0.5, 0.25, float64(float32(0.0995)), float64(float32(0.4)), float64(float32(0.5))}})
	for _, tc := range []struct {
		name string
		eps  float64
	}{{"static", 0}, {"anneal 0.9", 0.9}, {"anneal 1", 1}, {"anneal 0.3", 0.3}} {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]string{}
			if tc.eps > 0 {
				params["anneal"] = strconv.FormatFloat(tc.eps, 'g', -1, 64)
			}
			s, err := softBegin(t, softMatrix, params)
			if err != nil {
				t.Fatal(err)
			}
			want := v0.Clone()
			for epoch := range 4 {
				if epoch > 0 && tc.eps > 0 {
					LCLStep(want, tc.eps)
				}
				got := softPlan(t, s, epoch)
				for i := range 3 {
					for j := range 3 {
						if math.Abs(got[i][j]-want.At(i, j)) > 1e-7 {
							t.Fatalf("epoch %d: v[%d][%d] = %.9g, want %.9g", epoch, i, j, got[i][j], want.At(i, j))
						}
					}
				}
			}
		})
	}
}

// TestSoftRefusals: soft refuses a matrix no target distribution is, and
// parameters out of range, naming the row or the parameter.
func TestSoftRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      []float32
		params map[string]string
		want   string
	}{
		{"row sum", []float32{0.7, 0.2, 0.1, 0.2, 0.5, 0.2, 0.1, 0.4, 0.5}, nil, "row 1 sums to 0.9, want 1 within 0.001 (or --param normalize=true"},
		{"similarity", []float32{1, 0.5, 0.1, 0.5, 1, 0.2, 0.1, 0.2, 1}, nil, "row 0 sums to 1.6"},
		{"negative", []float32{0.7, 0.4, -0.1, 0.25, 0.5, 0.25, 0.1, 0.4, 0.5}, map[string]string{"normalize": "true"}, "row 0, column 2: -0.1 is negative"},
		{"NaN", []float32{0.7, 0.2, 0.1, float32(math.NaN()), 0.5, 0.25, 0.1, 0.4, 0.5}, nil, "s[1][0] = NaN, want a finite value"},
		{"zero row", []float32{0.7, 0.2, 0.1, 0, 0, 0, 0.1, 0.4, 0.5}, map[string]string{"normalize": "true"}, "row 1 sums to 0"},
		{"anneal above 1", softMatrix, map[string]string{"anneal": "1.5"}, "anneal = 1.5, want 0 (static) or ε in (0,1]"},
		{"anneal negative", softMatrix, map[string]string{"anneal": "-0.1"}, "anneal = -0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := softBegin(t, tc.m, tc.params)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// normalize takes rows of any positive sum, divided by it.
	s, err := softBegin(t, []float32{7, 2, 1, 1, 2, 1, 1, 1, 2}, map[string]string{"normalize": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if got := softPlan(t, s, 2); math.Abs(got[1][1]-0.5) > 1e-7 || math.Abs(got[0][0]-0.7) > 1e-7 {
		t.Fatalf("normalised rows %v", got)
	}
}

// TestSoftLossMatchesPyTorch: the loss soft's plan gives (the trainer's
// formula, internal/lossref) on fixed logits equals PyTorch's
// cross_entropy with probability targets that Python builds itself from
// the same matrix: divided by the row sums, then LCL's update applied
// literally per epoch. A hand value pins the static case too.
func TestSoftLossMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	logits := [][]float64{{0, math.Log(2), math.Log(3)}, {1.5, -0.5, 0.25}, {-1, 2, 0.5}, {0.3, 0.3, -2}}
	labels := []int{2, 0, 1, 2}
	// By hand: row 2 of softMatrix over its sum 0.9995, z = [0, ln2, ln3] →
	// −log p = [ln6, ln3, ln2].
	hand := (0.0995*math.Log(6) + 0.4*math.Log(3) + 0.5*math.Log(2)) / 0.9995
	out := py.Run(`
import json, sys, torch
z = torch.tensor(json.loads(sys.argv[1]), dtype=torch.float64)
y = json.loads(sys.argv[2])
m = torch.tensor(json.loads(sys.argv[3]), dtype=torch.float32).double()
v = m / m.sum(1, keepdim=True)
res = {}
for eps in (0.0, 0.9):
    w = v.clone()
    for epoch in range(4):
        if epoch > 0 and eps > 0:
            for c in range(3):
                rest = w[c].sum() - w[c, c]
                den = 1 + eps * rest
                row = eps * w[c] / den
                row[c] = 1 / den
                w[c] = row
        t = w[y].float().double()
        res["%g/%d" % (eps, epoch)] = torch.nn.functional.cross_entropy(z, t).item()
res["hand"] = torch.nn.functional.cross_entropy(z[:1], v[2:3].float().double()).item()
print(json.dumps(res))
`, mustJSON(logits), mustJSON(labels), mustJSON([][]float32{softMatrix[0:3], softMatrix[3:6], softMatrix[6:9]}))
	var ref map[string]float64
	if err := json.Unmarshal([]byte(out), &ref); err != nil {
		t.Fatalf("python: %v: %s", err, out)
	}
	if math.Abs(ref["hand"]-hand) > 1e-6 {
		t.Fatalf("PyTorch's loss of the hand example %.9g, by hand %.9g", ref["hand"], hand)
	}
	for _, eps := range []string{"0", "0.9"} {
		s, err := softBegin(t, softMatrix, map[string]string{"anneal": eps})
		if err != nil {
			t.Fatal(err)
		}
		for epoch := range 4 {
			p, err := s.Plan(context.Background(), sdk.PlanAt{Epoch: epoch})
			if err != nil {
				t.Fatal(err)
			}
			got, err := planLoss(p, Batch{Logits: logits, Labels: labels}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := ref[eps+"/"+strconv.Itoa(epoch)]
			if math.Abs(got-want) > 1e-6 {
				t.Errorf("anneal=%s epoch %d: loss %.9g, PyTorch %.9g", eps, epoch, got, want)
			}
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
