package cli

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer/torch"
)

// pyHAFrame: the package's frame of the height form's distances (and of
// its own WordNet heights), with S, s_min and the vectors' cosines for the
// check, and HAFrameLoss's loss and gradients on the engine's frame.
const pyHAFrame = `
def haframe(d):
    C, n = 10, len(d["y"])
    height = lcl.load_matrix(d["height"])
    heights = lcl.wordnet_lca_heights([s.wnid for s in lcl.load_synsets(d["synsets"])])
    def cos(v):
        v = v / v.norm(dim=1, keepdim=True)
        return v @ v.t()
    out = {}
    for name, dist in (("similarity", lcl.distance_from_similarity(height)), ("wordnet", heights)):
        fr = lcl.HAFrame.from_distance(dist, d["gamma"])
        g = torch.Generator().manual_seed(1)
        out[name] = {"S": fr.similarity.flatten().tolist(), "s_min": fr.s_min,
            "gram": float((fr.vectors @ fr.vectors.t() - fr.similarity).abs().max()),
            "cosines": cos(fr.vectors).flatten().tolist(),
            "embedded": float((cos(fr.embed(16, g)) - cos(fr.vectors)).abs().max())}
    head = torch.nn.Linear(C, C)
    fr.fix_head(head)
    out["head"] = {"fixed": float((head.weight.double() - fr.vectors).abs().max()) < 1e-7 and not head.weight.requires_grad
        and float(head.bias.abs().max()) == 0}
    V = torch.tensor(d["V"], dtype=torch.float32).reshape(C, C)
    x = torch.eye(n)
    y = torch.tensor(d["y"])
    for case in d["cases"]:
        W1 = torch.tensor(d["w0"], dtype=torch.float32).reshape(C, n).requires_grad_()
        b1 = torch.zeros(C, requires_grad=True)
        loss = lcl.HAFrameLoss(V, case["alpha"])(x @ W1.t() + b1, y)
        loss.backward()
        out[case["name"]] = {"loss": loss.item(), "gW": W1.grad.flatten().tolist(), "gb": b1.grad.tolist()}
    return out
`

// haframePart holds the package's HAFrame against the strategy's Go code
// and the engine: the frame of the lca height form's distances — S and
// s_min against strategy.HAFrameSimilarity (as haframe's Begin calls it,
// on the single-linkage distance of 1 − s, γ 2), V·Vᵀ = S, the vectors'
// cosines against those of strategy.HAFrameVectors (V itself is S's up to
// an orthogonal map) — and HAFrameLoss against one engine step of a model
// whose head is fixed to the strategy's V (torch.Model.FixHead, what the
// trainer does with a plan's classifier), features x·W1ᵀ + b1 of the
// identity, so the gradient of W1 and b1 is their change at learning rate 1.
func haframePart(t *testing.T, f *fashionFiles) *pyPart {
	const c, n, gamma = 10, 12, 2.0
	height := readMatrix(t, f.height)
	d := mat.NewSymDense(c, nil) // 1 − s, as the strategy reads it
	for i := range c {
		for j := i + 1; j < c; j++ {
			d.SetSym(i, j, 1-float64(height.At(i, j)))
		}
	}
	S, smin, err := strategy.HAFrameSimilarity(strategy.Subdominant(d), gamma)
	if err != nil {
		t.Fatal(err)
	}
	V, err := strategy.HAFrameVectors(S)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(80, 81))
	y := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 8}
	w0 := make([]float32, c*n)
	for i := range w0 {
		w0[i] = float32(r.NormFloat64())
	}
	eye := make([]float32, n*n)
	for i := range n {
		eye[i*n+i] = 1
	}
	type frameCase struct {
		Name  string  `json:"name"`
		Alpha float64 `json:"alpha"`
		res   stepResult
	}
	cases := []*frameCase{{Name: "haframe α 0.4", Alpha: 0.4}, {Name: "haframe α 1 (cosine alone)", Alpha: 1},
		{Name: "haframe α 2.5 (β 1)", Alpha: 2.5}, {Name: "haframe α 0 (cross-entropy)", Alpha: 0}}
	for _, fc := range cases {
		beta := 1.0
		if fc.Alpha <= 1 {
			beta = 1 - fc.Alpha
		}
		m := frameModel(t, c, n, w0, V.Data)
		fc.res = linearStep{classes: c, h: 1, w: n, w0: w0, x: eye, y: y, layer: "fc1",
			coefs: torch.Coefs{HardCE: beta, Cosine: fc.Alpha}}.run(t, m)
		head, bias := modelParams(t, m, "fc")
		for i, v := range head {
			if v != V.Data[i] || (i < c && bias[i] != 0) {
				t.Fatalf("the fixed head moved in the engine's step")
			}
		}
		m.Close()
	}
	input := map[string]any{"height": f.height, "synsets": f.synsets, "gamma": gamma, "V": V.Data, "y": y, "w0": w0,
		"cases": cases}
	return &pyPart{name: "haframe", title: "haframe's frame and loss equal the engine's", input: input,
		check: func(t *testing.T, raw json.RawMessage) {
			type frame struct {
				S              []float64
				SMin           float64 `json:"s_min"`
				Gram, Embedded float64
				Cosines        []float64
			}
			var got map[string]json.RawMessage
			decode(t, raw, &got)
			// The cosines of the strategy's vectors: the engine's targets.
			cos := make([]float64, c*c)
			for i := range c {
				for j := range c {
					var ab, aa, bb float64
					for k := range c {
						a, b := float64(V.At(i, k)), float64(V.At(j, k))
						ab, aa, bb = ab+a*b, aa+a*a, bb+b*b
					}
					cos[i*c+j] = ab / math.Sqrt(aa*bb)
				}
			}
			for name, tol := range map[string]float64{"similarity": 1e-12, "wordnet": 1e-6} {
				var fr frame
				decode(t, got[name], &fr)
				worstS, worstCos := 0.0, 0.0
				for i := range c {
					for j := range c {
						worstS = math.Max(worstS, math.Abs(fr.S[i*c+j]-S.At(i, j)))
						worstCos = math.Max(worstCos, math.Abs(fr.Cosines[i*c+j]-cos[i*c+j]))
					}
				}
				if len(fr.S) != c*c || worstS > tol || math.Abs(fr.SMin-smin) > 1e-12 {
					t.Errorf("%s: the package's S is %g from the strategy's, s_min %v against %v", name, worstS, fr.SMin, smin)
				}
				// The engine's V is float32; eigenvalues under 1e-6 are clipped.
				if fr.Gram > 1e-5 || worstCos > 1e-5 || fr.Embedded > 1e-12 {
					t.Errorf("%s: V·Vᵀ is %g from S, the cosines %g from the strategy's vectors', embedded %g", name, fr.Gram, worstCos, fr.Embedded)
				}
				t.Logf("%s: S within %.2g of the strategy's (s_min %.4f), V·Vᵀ within %.2g of S, cosines within %.2g of the strategy's vectors'",
					name, worstS, fr.SMin, fr.Gram, worstCos)
			}
			var head struct{ Fixed bool }
			decode(t, got["head"], &head)
			if !head.Fixed {
				t.Errorf("HAFrame.fix_head left the head trainable or other than the frame")
			}
			for _, fc := range cases {
				var g struct {
					Loss   float64
					GW, GB []float64
				}
				decode(t, got[fc.Name], &g)
				compareStep(t, fc.Name, g.Loss, g.GW, g.GB, fc.res)
			}
		}}
}

// frameModel is a linear model with a features layer fc1 (n → c, weights
// w1, bias 0) and a head fc fixed to the c×c class vectors v.
func frameModel(t *testing.T, c, n int, w1, v []float32) *torch.Model {
	t.Helper()
	spec := torch.Spec{InC: 1, InH: 1, InW: n, NumClasses: c, Features: torch.Seq("", torch.Flatten(), torch.Linear("fc1", n, c)),
		Head: torch.Seq("", torch.Linear("fc", c, c))}
	m, err := torch.NewModel(spec, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string, data []float32, shape ...int64) torch.Named {
		return torch.Named{Name: name, DType: torch.Float32, Shape: shape, Data: f32bytes(data)}
	}
	err = m.State().Load(map[string]torch.Named{
		"fc1.weight": named("fc1.weight", w1, int64(c), int64(n)),
		"fc1.bias":   named("fc1.bias", make([]float32, c), int64(c)),
		"fc.weight":  named("fc.weight", v, int64(c), int64(c)),
		"fc.bias":    named("fc.bias", make([]float32, c), int64(c)),
	})
	if err == nil {
		err = m.FixHead(v, c, c)
	}
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m
}
