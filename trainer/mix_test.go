package trainer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/torch"
)

// TestMixStepMatchesPyTorch trains one SGD step of the small CNN on a mixed
// batch with soft targets and holds the weights (batch-norm statistics
// included) against PyTorch doing what timm's Mixup does: the batch mixed
// with itself flipped (lam·x + (1−lam)·x.flip(0), or the box pasted from
// x.flip(0)), the CE against the mixed targets lam·T[y] + (1−lam)·T[y.flip(0)].
// A step without mixing must not match the mixed reference.
func TestMixStepMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	torch.SetThreads(1)
	dir := t.TempDir()
	in := models.Input{C: 1, H: 28, W: 28, NumClasses: 10}
	spec, err := models.Builtin().Get("cnn:channels=4x8,fc=16", in)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const n = 6
	x := make([]float32, n*28*28)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := []int64{0, 3, 3, 7, 9, 1}
	// Soft target rows, as a strategy's.
	T := make([]float32, 100)
	for c := range 10 {
		var s float32
		for j := range 10 {
			T[c*10+j] = float32(r.Float64())
			if j == c {
				T[c*10+j] += 3
			}
			s += T[c*10+j]
		}
		for j := range 10 {
			T[c*10+j] /= s
		}
	}
	targets, err := torch.NewTensor(T, []int64{10, 10}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer targets.Close()
	var xb bytes.Buffer
	binary.Write(&xb, binary.LittleEndian, x)
	xpath := filepath.Join(dir, "x")
	os.WriteFile(xpath, xb.Bytes(), 0o644)

	type refCase struct {
		Name   string    `json:"name"`
		Lam    float64   `json:"lam"`
		Box    []int     `json:"box"`
		Init   string    `json:"init"`
		After  string    `json:"after"`
		X      string    `json:"x"`
		Y      []int64   `json:"y"`
		T      []float32 `json:"targets"`
		Shape  []int     `json:"shape"`
		lclMix *torch.Mix
	}
	cutLam := 1 - float64(14*16)/(28*28)
	cases := []refCase{
		{Name: "mixup", Lam: 0.7, lclMix: &torch.Mix{Lam: 0.7}},
		{Name: "cutmix", Lam: cutLam, Box: []int{3, 17, 5, 21}, lclMix: &torch.Mix{Lam: cutLam, Y0: 3, Y1: 17, X0: 5, X1: 21}},
		{Name: "unmixed", Lam: 0.7}, // lcl does not mix: must differ
	}
	for i := range cases {
		c := &cases[i]
		torch.ManualSeed(11)
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		o, err := torch.NewSGD(m, 0, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		c.Init, c.After = filepath.Join(dir, c.Name+".init"), filepath.Join(dir, c.Name+".after")
		if err := writeWeights(c.Init, m.State(), nil); err != nil {
			t.Fatal(err)
		}
		trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Targets: targets,
			Coefs: torch.Coefs{SoftCE: 1}, LR: 0.1, Mix: c.lclMix}, torch.Input{X: x, N: n, C: 1, H: 28, W: 28, Y: y})
		if err := writeWeights(c.After, m.State(), nil); err != nil {
			t.Fatal(err)
		}
		o.Close()
		m.Close()
		c.X, c.Y, c.T, c.Shape = xpath, y, T, []int{n, 1, 28, 28}
	}
	js, _ := json.Marshal(cases)
	bench, _ := filepath.Abs("../bench")
	out := py.Run(loadST+`
import sys
sys.path.insert(0, sys.argv[1])
import refnets
import torch.nn.functional as F
torch.set_num_threads(1)
res = {}
for c in json.loads(sys.argv[2]):
    m = refnets.CNN(classes=10, channels=(4, 8), fc=16)
    m.load_state_dict(load(c["init"]), strict=True)
    m.train()
    x = torch.frombuffer(bytearray(open(c["x"], "rb").read()), dtype=torch.float32).reshape(c["shape"])
    y = torch.tensor(c["y"])
    T = torch.tensor(c["targets"]).reshape(10, 10)
    lam = c["lam"]
    if c["box"]:
        y0, y1, x0, x1 = c["box"]
        x = x.clone()
        x[:, :, y0:y1, x0:x1] = x.flip(0)[:, :, y0:y1, x0:x1]
    else:
        x = x.mul(lam).add_(x.flip(0).mul_(1.0 - lam))
    t = T[y] * lam + T[y.flip(0)] * (1.0 - lam)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    opt.zero_grad()
    loss = -(t * F.log_softmax(m(x), 1)).sum(1).mean()
    loss.backward()
    opt.step()
    got, sd = load(c["after"]), m.state_dict()
    res[c["name"]] = max((sd[k].double() - got[k].double()).abs().max().item() for k in sd if sd[k].dtype.is_floating_point)
print(json.dumps(res))
`, bench, string(js))
	var diff map[string]float64
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &diff); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	for _, c := range cases {
		d, ok := diff[c.Name]
		switch {
		case !ok:
			t.Errorf("%s: no result from PyTorch", c.Name)
		case c.lclMix == nil && !(d > 1e-3):
			t.Errorf("%s: an unmixed step is within %g of the mixed reference: the comparison cannot tell", c.Name, d)
		case c.lclMix != nil && !(d < 1e-5):
			t.Errorf("%s: weights differ from PyTorch's by %g", c.Name, d)
		}
		t.Logf("%s: largest difference from PyTorch's mixed step %.2g", c.Name, d)
	}
}

// TestMixingDraws holds Mixing.draw against timm's rules: λ ~ Beta(α, α)
// (mean 1/2, variance 1/(4(2α+1))), CutMix's box centred on a drawn pixel,
// sides ⌊√(1−λ)·h⌋ halved on each side and clipped, λ corrected to the
// box's area; with both, CutMix half the time; the same seed, the same
// draws.
func TestMixingDraws(t *testing.T) {
	const draws = 20000
	for _, tc := range []struct {
		name             string
		m                Mixing
		mixFrac, cutFrac float64 // expected fractions of mixed batches, and of CutMix among them
	}{
		{"mixup", Mixing{Mixup: 0.8}, 1, 0},
		{"cutmix", Mixing{CutMix: 1}, 1, 1},
		{"both", Mixing{Mixup: 0.8, CutMix: 1}, 1, 0.5},
		{"prob-switch", Mixing{Mixup: 0.8, CutMix: 1, Prob: 0.6, Switch: 0.25}, 0.6, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var cuts, mixups int
			var sum, sum2 float64
			for range draws {
				d := tc.m.draw(rng, 32, 24)
				if d == nil {
					continue
				}
				if !(d.Lam >= 0 && d.Lam < 1) {
					t.Fatalf("λ %v outside [0,1)", d.Lam)
				}
				if d.Y1 > d.Y0 { // CutMix
					cuts++
					if d.Y0 < 0 || d.X0 < 0 || d.Y1 > 32 || d.X1 > 24 || d.X1 <= d.X0 {
						t.Fatalf("box %+v outside the 32×24 image", *d)
					}
					if want := 1 - float64((d.Y1-d.Y0)*(d.X1-d.X0))/(32*24); d.Lam != want {
						t.Fatalf("box %+v: λ %v, want 1 − area/(h·w) = %v", *d, d.Lam, want)
					}
					continue
				}
				mixups++
				sum += d.Lam
				sum2 += d.Lam * d.Lam
			}
			// A CutMix box can come out empty (λ near 1): a few batches
			// fewer than drawn are mixed.
			if got := float64(cuts+mixups) / draws; got > tc.mixFrac || got < tc.mixFrac-0.02 {
				t.Errorf("%.3f of the batches mixed, want %.2f", got, tc.mixFrac)
			}
			if got := float64(cuts) / float64(cuts+mixups); math.Abs(got-tc.cutFrac) > 0.02 {
				t.Errorf("CutMix in %.3f of the mixed batches, want %.2f", got, tc.cutFrac)
			}
			if mixups > 0 {
				a := tc.m.Mixup
				mean, variance := sum/float64(mixups), sum2/float64(mixups)-(sum/float64(mixups))*(sum/float64(mixups))
				if want := 1 / (4 * (2*a + 1)); math.Abs(mean-0.5) > 0.01 || math.Abs(variance-want) > 0.01*want*10 {
					t.Errorf("mixup λ: mean %.4f variance %.4f, want 0.5 and %.4f (Beta(%g, %g))", mean, variance, want, a, a)
				}
			}
			a, b := tc.m.draw(rand.New(rand.NewPCG(9, 9)), 32, 24), tc.m.draw(rand.New(rand.NewPCG(9, 9)), 32, 24)
			if (a == nil) != (b == nil) || (a != nil && *a != *b) {
				t.Errorf("the same seed drew %+v and %+v", a, b)
			}
		})
	}
	// The box by hand: λ = 0.75 on a 32×24 image gives sides ⌊0.5·32⌋ = 16
	// and ⌊0.5·24⌋ = 12, so 8 and 6 each side of the centre.
	rng := rand.New(rand.NewPCG(3, 3))
	probe := rand.New(rand.NewPCG(3, 3))
	cy, cx := probe.IntN(32), probe.IntN(24)
	y0, y1, x0, x1 := cutmixBox(rng, 0.75, 32, 24)
	clip := func(v, hi int) int { return min(max(v, 0), hi) }
	if y0 != clip(cy-8, 32) || y1 != clip(cy+8, 32) || x0 != clip(cx-6, 24) || x1 != clip(cx+6, 24) {
		t.Errorf("box (%d,%d,%d,%d) for centre (%d,%d), want rows %d±8 and columns %d±6 clipped", y0, y1, x0, x1, cy, cx, cy, cx)
	}
	for _, m := range []Mixing{{Mixup: -1}, {CutMix: math.NaN()}, {Mixup: math.Inf(1)}, {Mixup: 1, Prob: 1.5}, {CutMix: 1, Switch: -0.1}, {Prob: 0.5}} {
		if err := m.Check(); err == nil {
			t.Errorf("%+v: no error", m)
		}
	}
	// The switch picks between mixup and CutMix: with one of them (or
	// none) it would do nothing, and is refused as --mix-prob is without
	// either.
	for _, m := range []Mixing{{Mixup: 1, Switch: 0.3}, {CutMix: 1, Switch: 0.3}, {Switch: 0.3}} {
		want := "--mix-switch-prob without both --mixup and --cutmix"
		if err := m.Check(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", m, err, want)
		}
	}
	for _, c := range []struct {
		m    Mixing
		want string
	}{
		{Mixing{}, ""},
		{Mixing{Mixup: 0.8, CutMix: 1}, "mixup=0.8 cutmix=1"},
		{Mixing{Mixup: 0.8, CutMix: 1, Prob: 1, Switch: 0.5}, "mixup=0.8 cutmix=1"}, // timm's defaults, named or not
		{Mixing{Mixup: 0.2, Prob: 0.5, Switch: 0.3}, "mixup=0.2 prob=0.5"},          // no switch without both
		{Mixing{Mixup: 0.8, CutMix: 1, Switch: 0.3}, "mixup=0.8 cutmix=1 switch=0.3"},
	} {
		if got := c.m.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
	if (Mixing{}).On() {
		t.Error("the zero value mixes")
	}
}

// A mixed step in channels-last gives the weights of the NCHW step (the
// box and the flip are taken over the same pixels whatever the layout), and
// in bf16 + channels-last it stays near them (the tolerance of
// TestEngineBF16AndChannelsLast).
func TestMixChannelsLastAndBF16(t *testing.T) {
	torch.SetThreads(1)
	in := models.Input{C: 3, H: 16, W: 16, NumClasses: 5}
	spec, err := models.Builtin().Get("cnn:channels=4x8,fc=16", in)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	const n = 6
	x := make([]float32, n*3*16*16)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := []int64{0, 1, 2, 3, 4, 0}
	for _, mix := range []*torch.Mix{{Lam: 0.65}, {Lam: 1 - 6.0*9/256, Y0: 2, Y1: 8, X0: 5, X1: 14}} {
		weights := func(p torch.Precision, cl bool) map[string][]float32 {
			torch.ManualSeed(3)
			m, err := torch.NewModel(spec, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			o, err := torch.NewSGD(m, 0.9, 5e-4, false)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			e, err := torch.NewEngine("cpu", torch.EngineOptions{Precision: p, ChannelsLast: cl})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for range 2 {
				if err := e.Put(torch.Input{X: x, N: n, C: 3, H: 16, W: 16, Y: y}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Train(&torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o},
					Coefs: torch.Coefs{HardCE: 1}, LR: 0.1, Mix: mix}, 0); err != nil {
					t.Fatal(err)
				}
			}
			return stateFloats(t, m)
		}
		ref := weights(torch.FP32, false)
		for _, c := range []struct {
			p   torch.Precision
			cl  bool
			tol float64
		}{{torch.FP32, true, 1e-5}, {torch.BF16, true, 0.05}} {
			got := weights(c.p, c.cl)
			worst, where := 0.0, ""
			for k, v := range ref {
				for i := range v {
					d := math.Abs(float64(got[k][i] - v[i]))
					if !(d <= worst) {
						worst, where = d, k
					}
				}
			}
			if !(worst <= c.tol) {
				t.Errorf("mix %+v, %v channels-last=%v: %s differs from fp32 NCHW by %g", *mix, c.p, c.cl, where, worst)
			}
		}
	}
}
