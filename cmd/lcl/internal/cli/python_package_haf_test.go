package cli

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/trainer/torch"
)

// pyHAF: the package's HAF levels of the height form's 1 − s and of its
// own WordNet heights, and HAFLoss's loss and gradients from the engine's
// starting parameters.
const pyHAF = `
def haf(d):
    n = len(d["y"])
    height = lcl.load_matrix(d["height"])
    heights = lcl.wordnet_lca_heights([s.wnid for s in lcl.load_synsets(d["synsets"])])
    levels = lcl.haf_levels(lcl.distance_from_similarity(height))
    out = {"levels": levels, "wordnet levels": lcl.haf_levels(heights), "two levels": lcl.haf_levels(heights, 2)}
    x, y = torch.eye(n), torch.tensor(d["y"])
    for case in d["cases"]:
        P = {k: torch.tensor(v["data"], dtype=torch.float32).reshape(v["shape"]).requires_grad_() for k, v in case["params"].items()}
        crit = lcl.HAFLoss(levels, P["fc1.weight"].shape[0], consistency=case["wc"], dissimilar=case["wd"], geometric=case["wg"])
        with torch.no_grad():
            for l, h in enumerate(crit.heads, 1):
                h.weight.copy_(P["level_heads.%d.weight" % l])
                h.bias.copy_(P["level_heads.%d.bias" % l])
        f = x @ P["fc1.weight"].t() + P["fc1.bias"]
        logits = f @ P["fc.weight"].t() + P["fc.bias"]
        loss = crit(logits, f, y, head_weight=P["fc.weight"])
        loss.backward()
        grads = {k: p.grad.flatten().tolist() for k, p in P.items() if not k.startswith("level_heads.")}
        for l, h in enumerate(crit.heads, 1):
            grads["level_heads.%d.weight" % l] = h.weight.grad.flatten().tolist()
            grads["level_heads.%d.bias" % l] = h.bias.grad.flatten().tolist()
        out[case["name"]] = {"loss": loss.item(), "grads": grads}
    return out
`

// hafPart holds the package's HAF against the strategy's Go code and the
// engine: its levels equal strategy.HAFLevels of the lca height form (and
// come out the same from its own WordNet heights), and HAFLoss gives the
// loss and the gradient of every parameter — the features layer, the
// model's head, each level head — of one engine step (SGD at learning
// rate 1) of a model with the strategy's levels (torch.Spec.Levels, as the
// trainer builds a haf stage's models), at their published weights and
// others.
func hafPart(t *testing.T, f *fashionFiles) *pyPart {
	const c, n, dim = 10, 12, 8
	height := readMatrix(t, f.height)
	levels, err := strategy.HAFLevels(height, c, 11)
	if err != nil {
		t.Fatal(err)
	}
	var tl []torch.Level
	var groups [][]int
	for _, l := range levels {
		tl = append(tl, torch.Level{Groups: l.Groups, Group: l.Group})
		groups = append(groups, l.Group)
	}
	y := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 8}
	eye := make([]float32, n*n)
	for i := range n {
		eye[i*n+i] = 1
	}
	type param struct {
		Shape []int64   `json:"shape"`
		Data  []float32 `json:"data"`
	}
	type hafCase struct {
		Name   string           `json:"name"`
		WC     float64          `json:"wc"`
		WD     float64          `json:"wd"`
		WG     float64          `json:"wg"`
		Params map[string]param `json:"params"`
		res    stepResult
		grads  map[string][]float64
	}
	cases := []*hafCase{{Name: "haf published weights", WC: 1, WD: 1, WG: 1}, {Name: "haf other weights", WC: 0.5, WD: 2, WG: 0.7}}
	for i, hc := range cases {
		if err := torch.ManualSeed(uint64(90 + i)); err != nil {
			t.Fatal(err)
		}
		spec := torch.Spec{InC: 1, InH: 1, InW: n, NumClasses: c, Features: torch.Seq("", torch.Flatten(), torch.Linear("fc1", n, dim)),
			Head: torch.Seq("", torch.Linear("fc", dim, c)), Levels: tl}
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		before, err := m.State().Copy()
		if err != nil {
			t.Fatal(err)
		}
		w0, _ := modelParams(t, m, "fc")
		hc.res = linearStep{classes: c, h: 1, w: n, w0: w0, x: eye, y: y,
			coefs: torch.Coefs{HardCE: 1, Consistency: hc.WC, Dissimilar: hc.WD, Geometric: hc.WG}}.run(t, m)
		after, err := m.State().Copy()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		hc.Params, hc.grads = map[string]param{}, map[string][]float64{}
		for _, b := range before {
			hc.Params[b.Name] = param{Shape: b.Shape, Data: bytesf32(b.Data)}
		}
		for _, a := range after {
			p := hc.Params[a.Name].Data
			for k, v := range bytesf32(a.Data) {
				hc.grads[a.Name] = append(hc.grads[a.Name], float64(p[k])-float64(v))
			}
		}
	}
	input := map[string]any{"height": f.height, "synsets": f.synsets, "y": y, "cases": cases}
	return &pyPart{name: "haf", title: "haf's levels and loss equal the engine's", input: input,
		check: func(t *testing.T, raw json.RawMessage) {
			var got map[string]json.RawMessage
			decode(t, raw, &got)
			for _, name := range []string{"levels", "wordnet levels"} {
				var lv [][]int
				decode(t, got[name], &lv)
				if !slices.EqualFunc(lv, groups, slices.Equal) {
					t.Errorf("%s: the package's %v, strategy.HAFLevels' %v", name, lv, groups)
				}
			}
			var two [][]int
			decode(t, got["two levels"], &two)
			if len(two) != 2 || !slices.Equal(two[0], groups[0]) || !slices.Equal(two[1], groups[len(groups)-1]) {
				t.Errorf("haf_levels(…, 2) = %v: want the finest and the coarsest of %v", two, groups)
			}
			t.Logf("%d levels of %v groups", len(groups), func() (g []int) {
				for _, l := range levels {
					g = append(g, l.Groups)
				}
				return g
			}())
			for _, hc := range cases {
				var g struct {
					Loss  float64
					Grads map[string][]float64
				}
				decode(t, got[hc.Name], &g)
				if math.Abs(g.Loss-hc.res.Loss) > 1e-5*math.Max(1, math.Abs(hc.res.Loss)) {
					t.Errorf("%s: the package's loss is %.7f, the engine's %.7f", hc.Name, g.Loss, hc.res.Loss)
				}
				worst, names := 0.0, []string{}
				for name, want := range hc.grads {
					names = append(names, name)
					have := g.Grads[name]
					if len(have) != len(want) {
						t.Errorf("%s: %s: %d gradients, the engine's %d", hc.Name, name, len(have), len(want))
						continue
					}
					for k := range want {
						worst = math.Max(worst, math.Abs(have[k]-want[k]))
					}
				}
				if worst > 2e-6 || len(g.Grads) != len(hc.grads) {
					t.Errorf("%s: the gradients differ from the engine's by up to %g (%d parameters, the engine's %d)",
						hc.Name, worst, len(g.Grads), len(hc.grads))
				}
				slices.Sort(names)
				t.Logf("%s: loss %.6f (engine %.6f), gradients of %s within %.2g", hc.Name, g.Loss, hc.res.Loss,
					strings.Join(names, ", "), worst)
			}
		}}
}
