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
// PyTorch modules of the same architecture (bench/trainer_ref.py): the
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
			if _, err := torch.TrainStep(&torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, X: x, N: n,
				C: tc.in.C, H: tc.in.H, W: tc.in.W, Y: y, Coefs: torch.Coefs{Hard: 1}, LR: 0.01}); err != nil {
				t.Fatal(err)
			}
		}
		ev, err := m.Eval(x, n, tc.in.C, tc.in.H, tc.in.W, nil, true, false)
		if err != nil {
			t.Fatal(err)
		}
		wpath := filepath.Join(dir, tc.name+".safetensors")
		if err := writeWeights(wpath, m, map[string]string{"model": tc.model}); err != nil {
			t.Fatal(err)
		}
		var xb bytes.Buffer
		binary.Write(&xb, binary.LittleEndian, x)
		xpath := filepath.Join(dir, tc.name+".x")
		os.WriteFile(xpath, xb.Bytes(), 0o644)
		script := `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import torch, trainer_ref
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
m = trainer_ref.CNN() if name == "cnn" else trainer_ref.ResNet18()
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
