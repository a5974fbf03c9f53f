package trainer

import (
	"bytes"
	"encoding/binary"
	"fmt"
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

// TestWeightsLoadInPyTorch writes the weights of lcl's small CNN and
// ResNet-18 (CIFAR stem) and loads them with strict load_state_dict into
// PyTorch modules of the same architecture (bench/refnets.py): the
// logits of both must agree on the same input. The safetensors file is
// parsed by hand in Python (Debian ships no safetensors package).
func TestWeightsLoadInPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	dir := t.TempDir()
	torch.SetThreads(1)
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name, model string
		in          models.Input
	}{
		{"cnn", "cnn", models.Input{C: 1, H: 28, W: 28, NumClasses: 10}},
		{"resnet18", "resnet18", models.Input{C: 3, H: 32, W: 32, NumClasses: 10}},
	} {
		spec, err := models.Builtin().Get(tc.model, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		torch.ManualSeed(7)
		m, err := torch.NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		// A few training steps make the BN running statistics non-trivial.
		o, _ := torch.NewSGD(m, 0.9, 0, false)
		defer o.Close()
		n := 4
		x := make([]float32, n*tc.in.C*tc.in.H*tc.in.W)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := []int64{1, 2, 3, 4}
		for range 2 {
			trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1}, LR: 0.01},
				torch.Input{X: x, N: n, C: tc.in.C, H: tc.in.H, W: tc.in.W, Y: y})
		}
		ev := evalOn(t, m, torch.Input{X: x, N: n, C: tc.in.C, H: tc.in.H, W: tc.in.W}, true)
		wpath := filepath.Join(dir, tc.name+".safetensors")
		if err := writeWeights(wpath, m.State(), map[string]string{"model": tc.model}); err != nil {
			t.Fatal(err)
		}
		var xb bytes.Buffer
		binary.Write(&xb, binary.LittleEndian, x)
		xpath := filepath.Join(dir, tc.name+".x")
		os.WriteFile(xpath, xb.Bytes(), 0o644)
		script := `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import torch, refnets
name, wpath, xpath, shape = sys.argv[2], sys.argv[3], sys.argv[4], [int(v) for v in sys.argv[5].split(",")]
torch.set_num_threads(1)
b = open(wpath, "rb").read()
n, = struct.unpack("<Q", b[:8])
h = json.loads(b[8:8+n]); data = b[8+n:]
dt = {"F32": torch.float32, "I64": torch.int64}
sd = {}
for k, v in h.items():
    if k == "__metadata__": continue
    s, e = v["data_offsets"]
    sd[k] = torch.frombuffer(bytearray(data[s:e]), dtype=dt[v["dtype"]]).reshape(v["shape"])
m = refnets.CNN() if name == "cnn" else refnets.resnet("resnet18")
m.load_state_dict(sd, strict=True)
m.eval()
x = torch.frombuffer(bytearray(open(xpath, "rb").read()), dtype=torch.float32).reshape(shape)
with torch.no_grad():
    print(" ".join("%.6g" % v for v in m(x).flatten().tolist()))
`
		bench, _ := filepath.Abs("../bench")
		out := py.Run(script, bench, tc.name, wpath, xpath, fmt.Sprintf("%d,%d,%d,%d", n, tc.in.C, tc.in.H, tc.in.W))
		f := strings.Fields(out)
		if len(f) != len(ev.Logits) {
			t.Fatalf("%s: python gave %d logits, lcl %d", tc.name, len(f), len(ev.Logits))
		}
		for i, s := range f {
			var v float64
			if _, err := fmt.Sscan(s, &v); err != nil {
				t.Fatal(err)
			}
			if math.Abs(v-float64(ev.Logits[i])) > 1e-4*math.Max(1, math.Abs(v)) {
				t.Fatalf("%s: logit %d: PyTorch %v, lcl %v", tc.name, i, v, ev.Logits[i])
			}
		}
	}
}

// TestTrainingMatchesPyTorch trains lcl's small CNN for three steps (soft
// targets, SGD with Nesterov momentum and weight decay, batch norm in
// training mode) and PyTorch's module of the same architecture
// (bench/refnets.py) from the same weights on the same batches with
// torch.optim.SGD: the weights and batch-norm statistics after the steps
// must agree. It checks the loss's gradient, the backward pass and the fused
// SGD update together against an implementation lcl shares nothing with.
func TestTrainingMatchesPyTorch(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	dir := t.TempDir()
	torch.SetThreads(1)
	in := models.Input{C: 1, H: 28, W: 28, NumClasses: 10}
	spec, err := models.Builtin().Get("cnn", in)
	if err != nil {
		t.Fatal(err)
	}
	torch.ManualSeed(11)
	m, err := torch.NewModel(spec, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o, err := torch.NewSGD(m, 0.9, 5e-4, true)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := writeWeights(filepath.Join(dir, "w0.safetensors"), m.State(), nil); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const n, steps, lr = 16, 3, 0.05
	C := in.NumClasses
	T := make([]float32, C*C)
	for i := range C {
		var sum float32
		for j := range C {
			T[i*C+j] = float32(r.Float64())
			sum += T[i*C+j]
		}
		for j := range C {
			T[i*C+j] /= sum
		}
	}
	tt, err := torch.NewTensor(T, []int64{int64(C), int64(C)}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	var xs bytes.Buffer
	var ys []string
	for range steps {
		x := make([]float32, n*in.C*in.H*in.W)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := make([]int64, n)
		for i := range y {
			y[i] = int64(r.IntN(C))
			ys = append(ys, fmt.Sprint(y[i]))
		}
		binary.Write(&xs, binary.LittleEndian, x)
		trainOn(t, &torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Targets: tt, Coefs: torch.Coefs{SoftCE: 1}, LR: lr},
			torch.Input{X: x, N: n, C: in.C, H: in.H, W: in.W, Y: y})
	}
	if err := writeWeights(filepath.Join(dir, "w1.safetensors"), m.State(), nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "x"), xs.Bytes(), 0o644)
	var tb bytes.Buffer
	binary.Write(&tb, binary.LittleEndian, T)
	os.WriteFile(filepath.Join(dir, "T"), tb.Bytes(), 0o644)
	bench, _ := filepath.Abs("../bench")
	out := py.Run(`
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import torch, torch.nn.functional as F, refnets
d, n, steps, lr = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
y = torch.tensor([int(v) for v in sys.argv[6].split(",")]).reshape(steps, n)
torch.set_num_threads(1)
def load(path):
    b = open(path, "rb").read()
    k, = struct.unpack("<Q", b[:8])
    h = json.loads(b[8:8+k]); data = b[8+k:]
    dt = {"F32": torch.float32, "I64": torch.int64}
    return {name: torch.frombuffer(bytearray(data[v["data_offsets"][0]:v["data_offsets"][1]]), dtype=dt[v["dtype"]]).reshape(v["shape"])
            for name, v in h.items() if name != "__metadata__"}
m = refnets.CNN()
m.load_state_dict(load(d + "/w0.safetensors"), strict=True)
m.train()
x = torch.frombuffer(bytearray(open(d + "/x", "rb").read()), dtype=torch.float32).reshape(steps, n, 1, 28, 28)
T = torch.frombuffer(bytearray(open(d + "/T", "rb").read()), dtype=torch.float32).reshape(10, 10)
opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
for s in range(steps):
    loss = -(T.index_select(0, y[s]) * F.log_softmax(m(x[s]), 1)).sum(1).mean()
    opt.zero_grad(); loss.backward(); opt.step()
want = load(d + "/w1.safetensors")
worst = ("every-tensor-equal", 0.0)
for name, v in m.state_dict().items():
    if name not in want: raise SystemExit("lcl lacks " + name)
    err = ((v.double() - want[name].double()).abs().max() / (1 + v.double().abs().max())).item()
    if err > worst[1]: worst = (name, err)
print(worst[0], worst[1])
`, bench, dir, fmt.Sprint(n), fmt.Sprint(steps), fmt.Sprint(lr), strings.Join(ys, ","))
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("python printed %q", out)
	}
	var worst float64
	fmt.Sscan(f[1], &worst)
	// float32 training of three steps from identical weights: the two sides
	// differ only in the order of floating-point operations.
	if worst > 1e-5 {
		t.Errorf("after %d steps the weights differ from PyTorch's: worst %s, relative error %g", steps, f[0], worst)
	}
	t.Logf("worst relative difference from PyTorch after %d steps: %s %g", steps, f[0], worst)
}
