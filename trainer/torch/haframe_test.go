//go:build cgo

package torch

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/internal/testdep"
)

// haframeRef is HAFrame's published loss (ltong1130ztr/HAFrame,
// HAFrame/losses.py: MixedLoss_CEandGeneralSCSL with reduction batchmean),
// written from its formula: β·CE(f·Vᵀ, y) + α·Σ_i Σ_c (cos(V_c, f_i) −
// S[y_i, c])² / n, with features f = x·W1ᵀ + b1 and S the class vectors'
// cosines (what their solver builds V from). It prints the loss and the
// gradients of W1 and b1.
const haframeRef = `
import json, sys, torch
import torch.nn.functional as F
d = json.load(open(sys.argv[1]))
t = lambda k: torch.tensor(d[k], dtype=torch.float64)
x, V, S = t("x"), t("V"), t("S")
W1, b1 = t("W1").requires_grad_(), t("b1").requires_grad_()
y = torch.tensor(d["y"])
f = x @ W1.T + b1
logits = f @ V.T
sim = torch.cat([F.cosine_similarity(V[c], f, dim=1).unsqueeze(1) for c in range(V.shape[0])], dim=1)
gscsl = torch.square(sim - S[y]).sum() / y.shape[0]
loss = d["beta"] * F.cross_entropy(logits, y) + d["alpha"] * gscsl
loss.backward()
print(json.dumps({"loss": loss.item(), "gW1": W1.grad.flatten().tolist(), "gb1": b1.grad.tolist()}))
`

// TestHAFrameLossMatchesPyTorch trains one SGD step of a model whose head
// is fixed (FixHead) on HAFrame's loss (Coefs.HardCE, Coefs.Cosine) and
// holds the step's loss and the features layer's gradients (the update over
// the learning rate) against PyTorch's autograd of the published loss in
// float64; the fixed head and its zero bias must not move.
func TestHAFrameLossMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	SetThreads(1)
	const n, in, d, c, lr = 6, 6, 5, 4, 0.5
	spec := Spec{InC: 1, InH: 2, InW: 3, NumClasses: c, Features: Seq("", Flatten(), Linear("fc1", in, d)),
		Head: Seq("", Linear("fc", d, c))}
	r := rand.New(rand.NewPCG(3, 4))
	x := lossref.Normal32(r, n*in)
	y := []int64{0, 1, 2, 3, 1, 0}
	V := lossref.Normal32(r, c*d)
	S := rowCosines(V, c, d)
	for _, tc := range []struct {
		name        string
		beta, alpha float64
	}{{"published mix", 0.6, 0.4}, {"cosine alone", 0, 1}, {"cosine over 1", 1, 2.5}} {
		t.Run(tc.name, func(t *testing.T) {
			ManualSeed(5)
			m, err := NewModel(spec, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.FixHead(V, c, d); err != nil {
				t.Fatal(err)
			}
			o, err := NewSGD(m, 0, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			before := stateFloats(t, m)
			res, err := trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o},
				Coefs: Coefs{HardCE: tc.beta, Cosine: tc.alpha}, LR: lr}, Input{X: x, N: n, C: 1, H: 2, W: 3, Y: y})
			if err != nil {
				t.Fatal(err)
			}
			after := stateFloats(t, m)
			for i, v := range after["fc.weight"] {
				if v != V[i] {
					t.Fatalf("fixed head moved: fc.weight[%d] = %g, want %g", i, v, V[i])
				}
			}
			for i, v := range after["fc.bias"] {
				if v != 0 {
					t.Fatalf("fixed head's bias[%d] = %g, want 0", i, v)
				}
			}
			in := map[string]any{"x": lossref.Rows(x, n, in), "y": y, "V": lossref.Rows(V, c, d),
				"S": rows64(S, c), "W1": lossref.Rows(before["fc1.weight"], d, in), "b1": lossref.Float64s(before["fc1.bias"]),
				"beta": tc.beta, "alpha": tc.alpha}
			path := filepath.Join(t.TempDir(), "in.json")
			b, _ := json.Marshal(in)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var ref struct {
				Loss     float64
				GW1, GB1 []float64
			}
			if err := json.Unmarshal([]byte(py.Run(haframeRef, path)), &ref); err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(res.Loss[0])-ref.Loss) > 1e-5*math.Max(1, math.Abs(ref.Loss)) {
				t.Errorf("loss %.7g, PyTorch %.7g", res.Loss[0], ref.Loss)
			}
			for _, p := range []struct {
				name string
				ref  []float64
			}{{"fc1.weight", ref.GW1}, {"fc1.bias", ref.GB1}} {
				for i, g := range p.ref {
					got := (float64(before[p.name][i]) - float64(after[p.name][i])) / lr
					if math.Abs(got-g) > 2e-5*math.Max(1, math.Abs(g)) {
						t.Errorf("%s gradient[%d] = %.7g, PyTorch %.7g", p.name, i, got, g)
					}
				}
			}
		})
	}
}

// rowCosines are the pairwise cosines of the c rows of v (d values each).
func rowCosines(v []float32, c, d int) []float64 {
	S := make([]float64, c*c)
	for a := range c {
		for b := range c {
			var ab, aa, bb float64
			for k := range d {
				va, vb := float64(v[a*d+k]), float64(v[b*d+k])
				ab, aa, bb = ab+va*vb, aa+va*va, bb+vb*vb
			}
			S[a*c+b] = ab / math.Sqrt(aa*bb)
		}
	}
	return S
}

// rows64 is v as c rows.
func rows64(v []float64, c int) [][]float64 {
	out := make([][]float64, len(v)/c)
	for i := range out {
		out[i] = v[i*c : (i+1)*c]
	}
	return out
}

// A fixed classifier needs a head of one linear layer and a classes×width
// matrix; the cosine term needs a fixed head.
func TestFixHeadRefusals(t *testing.T) {
	SetThreads(1)
	twoLayer := Spec{InC: 1, InH: 2, InW: 3, NumClasses: 3, Features: Seq("", Flatten()),
		Head: Seq("", Linear("fc1", 6, 4), ReLU(), Linear("fc", 4, 3))}
	one := Spec{InC: 1, InH: 2, InW: 3, NumClasses: 3, Features: Seq("", Flatten(), Linear("fc1", 6, 4)),
		Head: Seq("", Linear("fc", 4, 3))}
	for _, tc := range []struct {
		name       string
		spec       Spec
		rows, cols int
		want       string
	}{
		{"two-layer head", twoLayer, 3, 6, "head is one linear layer"},
		{"wrong width", one, 3, 5, "want 3x4"},
		{"wrong classes", one, 2, 4, "want 3x4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewModel(tc.spec, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			err = m.FixHead(make([]float32, tc.rows*tc.cols), tc.rows, tc.cols)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FixHead %d×%d: %v, want an error with %q", tc.rows, tc.cols, err, tc.want)
			}
		})
	}
	m, err := NewModel(one, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o, _ := NewSGD(m, 0, 0, false)
	defer o.Close()
	_, err = trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{Cosine: 1}, LR: 0.1},
		Input{X: make([]float32, 12), N: 2, C: 1, H: 2, W: 3, Y: []int64{0, 1}})
	if err == nil || !strings.Contains(err.Error(), "without a fixed classifier") {
		t.Errorf("cosine term without a fixed head: %v", err)
	}
}
