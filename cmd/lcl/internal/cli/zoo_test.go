package cli

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer/data"
)

const zooData = "synthetic?n=8&test=4&classes=4&shape=3,32,32"

// zooBatch writes the 8 training images of zooData (one batch of the
// runs below) for Python, in example order.
func zooBatch(t *testing.T, dir string) string {
	t.Helper()
	train, _, err := data.Open(zooData)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 8*3*32*32)
	for i := range 8 {
		if err := train.Decode(i, x[i*3072:(i+1)*3072], false, nil); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "x.bin")
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPython writes script to a file (torch.jit.script reads the source of
// what it compiles) and runs it; the last line of its output is returned.
func runPython(t *testing.T, py *testdep.Py, dir, script string, args ...string) string {
	t.Helper()
	path := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := py.Command(append([]string{path}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// firstLoss returns the train loss of epoch 1 (a single step: the batch is
// the whole training set) from lcl train --json output.
func firstLoss(t *testing.T, out string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		var m struct {
			Type      string  `json:"message_type"`
			Epoch     int     `json:"epoch"`
			Stage     string  `json:"stage"`
			TrainLoss float64 `json:"train_loss"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Type == "epoch" && m.Epoch == 1 {
			return m.TrainLoss
		}
	}
	t.Fatalf("no epoch 1 in %q", out)
	return 0
}

// TestTorchScriptModelTrainsWithLCL scripts torchvision's resnet18 with
// Debian's PyTorch, trains it three steps with --strategy lcl on synthetic
// data, and compares the first step's loss (the soft-target cross-entropy
// against LCL's first targets, from lcl plan) with PyTorch's from the same
// weights and batch; lcl eval reads the result. DML (a second,
// re-initialised peer) and CN (the penultimate features of the pretrained
// model) train a small scripted module.
func TestTorchScriptModelTrainsWithLCL(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	dir := t.TempDir()
	x := zooBatch(t, dir)
	sim := filepath.Join(dir, "sim.npy")
	if err := npy.WriteFile(sim, 4, 4, []float64{1, .6, .2, .1, .6, 1, .3, .2, .2, .3, 1, .5, .1, .2, .5, 1}); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan")
	if r := cliRun(t, "plan", "--strategy", "lcl", "--epsilon", "0.9", "--matrix", sim, "--epochs", "3", "--out", plan); r.code != 0 {
		t.Fatalf("plan: %s", r.err)
	}
	_, _, T := readNpy(t, filepath.Join(plan, "epoch-000.npy"))
	tj, _ := json.Marshal(T)
	pt := filepath.Join(dir, "resnet18.pt")
	ref := runPython(t, py, dir, `
import json, sys
import torch, torch.nn.functional as F, torchvision
pt, xpath, T = sys.argv[1], sys.argv[2], torch.tensor(json.loads(sys.argv[3]), dtype=torch.float32).reshape(4, 4)
torch.manual_seed(0)
torch.set_num_threads(1)
m = torchvision.models.resnet18(num_classes=4)
torch.jit.script(m).save(pt)
small = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
torch.jit.script(small).save(pt + ".small")
x = torch.frombuffer(bytearray(open(xpath, "rb").read()), dtype=torch.float32).reshape(8, 3, 32, 32)
y = torch.arange(8) % 4
m.train()
loss = -(T[y] * F.log_softmax(m(x), 1)).sum(1).mean()
print("%.9g" % loss.item())
`, pt, x, string(tj))
	var want float64
	if _, err := fmt.Sscan(ref, &want); err != nil {
		t.Fatalf("python printed %q", ref)
	}
	run := filepath.Join(dir, "run")
	r := cliRun(t, "--json", "--store", filepath.Join(dir, "store"), "train", "--data", zooData, "--model", "torchscript:"+pt,
		"--strategy", "lcl", "--epsilon", "0.9", "--matrix", sim, "--epochs", "3", "--batch", "8", "--lr", "0.01",
		"--threads", "1", "--out", run)
	if r.code != 0 {
		t.Fatalf("train: exit %d\n%s", r.code, r.err)
	}
	got := firstLoss(t, r.out)
	if math.Abs(got-want) > 1e-5 {
		t.Errorf("first-step loss: lcl %.7f, PyTorch %.7f", got, want)
	}
	t.Logf("first-step loss: lcl %.9g, PyTorch %.9g", got, want)
	if !strings.Contains(r.out, `"epoch":3`) {
		t.Errorf("three epochs expected:\n%s", r.out)
	}
	ck, err := os.ReadFile(filepath.Join(run, "checkpoint.safetensors"))
	if err != nil || !strings.Contains(string(ck[:min(len(ck), 1<<16)]), `"peer0/layer4.1.bn2.running_var"`) {
		t.Errorf("checkpoint lacks the module's parameters (%v)", err)
	}
	if r := cliRun(t, "--json", "eval", "--checkpoint", run, "--threads", "1"); r.code != 0 || !strings.Contains(r.out, `"test_top1"`) {
		t.Errorf("eval of a TorchScript run: exit %d: %s %s", r.code, r.out, r.err)
	}
	// The other strategies on a small scripted module (the properties do not
	// depend on its size): DML's second peer, CN's features.
	for _, strat := range []string{"dml", "cn"} {
		r := cliRun(t, "--json", "--store", filepath.Join(dir, "store"), "train", "--data", zooData, "--model", "torchscript:"+pt+".small",
			"--strategy", strat, "--matrix", sim, "--epochs", "2", "--batch", "4", "--lr", "0.01", "--threads", "1",
			"--out", filepath.Join(dir, strat))
		if r.code != 0 {
			t.Errorf("%s: exit %d\n%s", strat, r.code, r.err)
		}
	}
}

// TestInitFromPyTorchWeights writes torchvision resnet18 weights with the
// three lines docs/trainer.md gives, starts lcl from them with --init, and
// compares the first step's loss with PyTorch's from the same weights and
// batch. A classifier for other classes is refused without --init-skip fc
// and accepted with it; another architecture's file lists what is missing
// and unexpected in one error.
func TestInitFromPyTorchWeights(t *testing.T) {
	py := testdep.PythonModules(t, "torch", "torchvision")
	dir := t.TempDir()
	x := zooBatch(t, dir)
	doc, err := os.ReadFile("../../../../docs/trainer.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```python\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	var convert string
	for _, b := range blocks {
		if strings.Contains(b[1], `"model.safetensors", "wb"`) {
			convert = b[1]
		}
	}
	if strings.Count(strings.TrimSpace(convert), "\n") != 3 {
		t.Fatalf("docs/trainer.md: no import and three-line conversion block found:\n%s", convert)
	}
	ref := runPython(t, py, dir, `
import os, sys
import torch, torch.nn.functional as F, torchvision
xpath, convert = sys.argv[1], sys.argv[2]
os.chdir(sys.argv[3])
torch.manual_seed(1)
torch.set_num_threads(1)
m = torchvision.models.resnet18(num_classes=4)
with torch.no_grad():
    m(torch.randn(4, 3, 32, 32))  # batch-norm statistics away from 0/1
torch.save(m.state_dict(), "model.pth")
exec(convert)
os.rename("model.safetensors", "r18-4.safetensors")
torch.save(torchvision.models.resnet18(num_classes=7).state_dict(), "model.pth")
exec(convert)
os.rename("model.safetensors", "r18-7.safetensors")
x = torch.frombuffer(bytearray(open(xpath, "rb").read()), dtype=torch.float32).reshape(8, 3, 32, 32)
y = torch.arange(8) % 4
m.train()
print("%.9g" % F.cross_entropy(m(x), y).item())
`, x, convert, dir)
	var want float64
	if _, err := fmt.Sscan(ref, &want); err != nil {
		t.Fatalf("python printed %q", ref)
	}
	pyDir := dir
	train := func(out string, args ...string) cliResult {
		return cliRun(t, append([]string{"--json", "train", "--no-store", "--data", zooData, "--strategy", "sl", "--epochs", "1",
			"--batch", "8", "--lr", "0.01", "--threads", "1", "--out", filepath.Join(dir, out)}, args...)...)
	}
	r := train("init", "--model", "resnet18:stem=imagenet", "--init", filepath.Join(pyDir, "r18-4.safetensors"))
	if r.code != 0 {
		t.Fatalf("train --init: exit %d\n%s", r.code, r.err)
	}
	got := firstLoss(t, r.out)
	if math.Abs(got-want) > 1e-5 {
		t.Errorf("first-step loss from --init: lcl %.7f, PyTorch %.7f", got, want)
	}
	t.Logf("first-step loss from --init: lcl %.9g, PyTorch %.9g", got, want)
	r = train("seven", "--model", "resnet18:stem=imagenet", "--init", filepath.Join(pyDir, "r18-7.safetensors"))
	if r.code != 1 || !strings.Contains(r.err, "fc.weight (file [7 512], model [4 512])") || !strings.Contains(r.err, "--init-skip fc") {
		t.Errorf("a 7-class classifier for 4 classes: exit %d, %s", r.code, r.err)
	}
	r = train("skip", "--model", "resnet18:stem=imagenet", "--init", filepath.Join(pyDir, "r18-7.safetensors"), "--init-skip", "fc")
	if r.code != 0 {
		t.Errorf("--init-skip fc: exit %d, %s", r.code, r.err)
	}
	r = train("other", "--model", "resnet18:stem=imagenet", "--init", filepath.Join(pyDir, "r18-7.safetensors"), "--init-skip", "head")
	if r.code != 1 || !strings.Contains(r.err, `no tensor under "head" (its classifier: fc)`) {
		t.Errorf("--init-skip of no module: exit %d, %s", r.code, r.err)
	}
	r = train("dense", "--model", "densenet121:blocks=2x2,growth=8,init=16", "--init", filepath.Join(pyDir, "r18-4.safetensors"))
	if r.code != 1 || !strings.Contains(r.err, "missing ") || !strings.Contains(r.err, "unexpected ") {
		t.Errorf("resnet18 weights for a DenseNet: exit %d, %s", r.code, r.err)
	}
	t.Logf("resnet18 weights for a DenseNet: %s", r.err)
}
