//go:build cgo

package torch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
)

func randn(r *rand.Rand, n int) []float32 { return lossref.Normal32(r, n) }

func TestCxxErrorsAreGoErrors(t *testing.T) {
	m, err := NewModel(cnnSpec(1, 8, 8, 3, []int{4}, 8, 0), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o, err := NewSGD(m, 0.9, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	e := newEngine(t)
	// Three channels for a model built for one: conv2d throws in C++.
	x := make([]float32, 2*3*8*8)
	_, err = trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: 0.1},
		Input{X: x, N: 2, C: 3, H: 8, W: 8, Y: []int64{0, 1}})
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "channels") || te.Op != "train step" {
		t.Fatalf("shape mismatch: got %v, want a *torch.Error about channels", err)
	}
	// A target matrix of the wrong size.
	bad, err := NewTensor(make([]float32, 4), []int64{2, 2}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Targets: bad, Coefs: Coefs{SoftCE: 1}, LR: 0.1},
		Input{X: make([]float32, 2*64), N: 2, C: 1, H: 8, W: 8, Y: []int64{0, 1}})
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "target matrix") {
		t.Fatalf("bad target matrix: got %v", err)
	}
	// Invalid architectures: Go's checks, and the C++ side's on a tree that
	// bypasses them.
	wrongIn := mlpSpec(1, 2, 2, 3, 5)
	wrongIn.Features.Children[1].In = 7
	unnamed := mlpSpec(1, 2, 2, 3)
	unnamed.Head.Children[0].Name = ""
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{wrongIn, "linear 7→5 on 4"},
		{unnamed, "no name"},
		{Spec{InC: 1, InH: 2, InW: 2, NumClasses: 2, Features: Seq("", Flatten()), Head: Seq("", Node{Op: Op(42)})}, "unknown node kind"},
		{cnnSpec(1, 8, 8, 3, []int{4, 4, 4, 4}, 8, 0), "too small"},
	} {
		if _, err := NewModel(tc.spec, "cpu"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewModel: %v, want an error about %q", err, tc.want)
		}
	}
	nodes, free := flatten(mlpSpec(1, 2, 2, 3))
	nodes[1].n_children = 9 // the features sequence claims more nodes than there are
	_, err = newModelFromNodes(nodes, 1, 2, 2, 3)
	free()
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "past the end") {
		t.Errorf("truncated tree: %v, want a *torch.Error", err)
	}
	if _, err := NewModel(mlpSpec(1, 2, 2, 2), "nodevice"); err == nil {
		t.Error("unknown device accepted")
	}
}

// TestSGDUpdate checks one Nesterov step with weight decay on a linear
// model: the gradient of the logits (internal/lossref) times the inputs.
func TestSGDUpdate(t *testing.T) {
	const n, d, c = 3, 4, 3
	ManualSeed(5)
	m, err := NewModel(mlpSpec(1, 1, d, c), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const lr, mom, wd = 0.1, 0.9, 0.01
	o, err := NewSGD(m, mom, wd, true)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	r := rand.New(rand.NewPCG(7, 8))
	W, b, after, gW, gb := linearStep(t, m, o, randn(r, n*d), []int64{2, 0, 1}, c, lossref.Coefs{SoftCE: 1}, lr)
	check := func(name string, p0, p1 []float32, g []float64) {
		for i := range p0 {
			dd := g[i] + wd*float64(p0[i])
			want := float64(p0[i]) - lr*(1+mom)*dd // first step: buf = d; Nesterov: d + m·buf
			if math.Abs(float64(p1[i])-want) > 1e-6 {
				t.Fatalf("%s[%d] = %.7f, want %.7f", name, i, p1[i], want)
			}
		}
	}
	check("fc.weight", W, after["fc.weight"], gW)
	check("fc.bias", b, after["fc.bias"], gb)
}

// linearStep takes one training step of m, a linear model (fc: d → c inputs x
// of n = len(y) rows), with o on (x, y) under coefs and returns fc's weight
// and bias before the step, the parameters after it, and the loss
// reference's gradients of the weight and the bias at the start.
func linearStep(t *testing.T, m *Model, o *Optimizer, x []float32, y []int64, c int, coefs lossref.Coefs, lr float64) (W, b []float32, after map[string][]float32, gW, gb []float64) {
	t.Helper()
	n := len(y)
	d := len(x) / n
	before := stateFloats(t, m)
	W, b = before["fc.weight"], before["fc.bias"]
	if _, err := trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: coefs, LR: lr},
		Input{X: x, N: n, C: 1, H: 1, W: d, Y: y}); err != nil {
		t.Fatal(err)
	}
	after = stateFloats(t, m)
	_, g, err := lossref.Loss(lossref.Input{Logits: linearLogits(W, b, x, n, d, c), Labels: lossref.Labels(y), Coefs: coefs})
	if err != nil {
		t.Fatal(err)
	}
	gW, gb = linearGrads(g, x, d)
	return W, b, after, gW, gb
}

func stateFloats(t *testing.T, m *Model) map[string][]float32 {
	t.Helper()
	st, err := m.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, s := range st {
		if s.DType != Float32 {
			continue
		}
		f := make([]float32, len(s.Data)/4)
		for i := range f {
			f[i] = math.Float32frombits(uint32(s.Data[4*i]) | uint32(s.Data[4*i+1])<<8 | uint32(s.Data[4*i+2])<<16 | uint32(s.Data[4*i+3])<<24)
		}
		out[s.Name] = f
	}
	return out
}

func TestStateRoundTripAndMismatch(t *testing.T) {
	spec := cnnSpec(1, 8, 8, 3, []int{4}, 8, 0)
	ManualSeed(1)
	a, _ := NewModel(spec, "cpu")
	defer a.Close()
	ManualSeed(2)
	b, _ := NewModel(spec, "cpu")
	defer b.Close()
	sa, err := a.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Named{}
	for _, s := range sa {
		m[s.Name] = s
	}
	if err := b.State().Load(m); err != nil {
		t.Fatal(err)
	}
	sb, _ := b.State().Copy()
	for i := range sa {
		if sa[i].Name != sb[i].Name || !bytes.Equal(sa[i].Data, sb[i].Data) {
			t.Fatalf("tensor %s differs after load", sa[i].Name)
		}
	}
	bad := map[string]Named{}
	for k, v := range m {
		bad[k] = v
	}
	w := bad["conv1.weight"]
	w.Shape = []int64{4, 1, 3, 4}
	bad["conv1.weight"] = w
	if err := b.State().Load(bad); err == nil || !strings.Contains(err.Error(), "conv1.weight") {
		t.Errorf("mismatched shape: %v", err)
	}
	delete(bad, "conv1.weight")
	if err := b.State().Load(bad); err == nil {
		t.Error("missing tensor accepted")
	}
	// Info and Read stream the same state as Copy, tensor by tensor, for a
	// model and an optimizer (momentum buffers after a step).
	o, err := NewSGD(a, 0.9, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := trainStep(newEngine(t), &Step{Models: []*Model{a}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: 0.1},
		Input{X: randn(rand.New(rand.NewPCG(1, 1)), 2*64), N: 2, C: 1, H: 8, W: 8, Y: []int64{0, 2}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		state *State
	}{{"model", a.State()}, {"optimizer", o.State()}} {
		full, err := tc.state.Copy()
		if err != nil {
			t.Fatal(err)
		}
		info, err := tc.state.Info()
		if err != nil || len(info) != len(full) || len(info) == 0 {
			t.Fatalf("%s: %d infos (%v), %d tensors", tc.name, len(info), err, len(full))
		}
		nonzero := false
		for i, n := range info {
			if n.Name != full[i].Name || n.DType != full[i].DType || fmt.Sprint(n.Shape) != fmt.Sprint(full[i].Shape) ||
				n.Data != nil || n.NumBytes() != int64(len(full[i].Data)) {
				t.Fatalf("%s: info %d is %+v, state %s %v %v", tc.name, i, n, full[i].Name, full[i].DType, full[i].Shape)
			}
			buf := make([]byte, n.NumBytes())
			if err := tc.state.Read(i, buf); err != nil || !bytes.Equal(buf, full[i].Data) {
				t.Fatalf("%s: Read(%d): %v", tc.name, i, err)
			}
			nonzero = nonzero || slices.ContainsFunc(buf, func(b byte) bool { return b != 0 })
		}
		if !nonzero {
			t.Errorf("%s: state is all zeros: the comparison proves nothing", tc.name)
		}
		if err := tc.state.Read(0, make([]byte, info[0].NumBytes()+4)); err == nil {
			t.Errorf("%s: Read into a buffer of the wrong size succeeded", tc.name)
		}
		if err := tc.state.Read(len(info), nil); err == nil {
			t.Errorf("%s: Read past the end succeeded", tc.name)
		}
	}
}

// rss is the resident set size in bytes (Linux).
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatalf("reading RSS: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// TestMemoryFlat runs 2,000 training and evaluation steps and requires the
// resident memory after them to be within a few MiB of that after warm-up.
func TestMemoryFlat(t *testing.T) {
	SetThreads(1)
	spec := cnnSpec(1, 8, 8, 4, []int{4}, 16, 0)
	m, _ := NewModel(spec, "cpu")
	defer m.Close()
	o, _ := NewSGD(m, 0.9, 5e-4, true)
	defer o.Close()
	r := rand.New(rand.NewPCG(1, 1))
	const n = 16
	x := randn(r, n*64)
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i % 4)
	}
	T := make([]float32, 16)
	for i := range 4 {
		T[i*4+i] = 1
	}
	ws := make([]float32, n)
	for i := range ws {
		ws[i] = float32(i % 3) // some zero weights
	}
	e := newEngine(t)
	in := Input{X: x, N: n, C: 1, H: 8, W: 8, Y: y, Weights: ws}
	step := func() {
		tt, err := NewTensor(T, []int64{4, 4}, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Targets: tt,
			Coefs: Coefs{SoftCE: 1, HardCE: 0.1}, LR: 0.01}, in); err != nil {
			t.Fatal(err)
		}
		tt.Close()
		if _, err := evalBatch(e, m, in, true, true); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		step()
	}
	base := rss(t)
	for range 2000 {
		step()
	}
	if grew := rss(t) - base; grew > 8<<20 {
		t.Errorf("RSS grew by %d KiB over 2,000 steps", grew>>10)
	}
}

func TestDeterministicSingleThread(t *testing.T) {
	// The two runs go to two OS threads that used 2 threads before
	// SetThreads(1) (as an earlier test's may have): both must run with 1.
	a, b := newLockedThread(), newLockedThread()
	defer a.stop()
	defer b.stop()
	for _, l := range []*lockedThread{a, b} {
		l.do(func() { SetThreads(2); Threads() })
	}
	SetThreads(1)
	run := func() []Named {
		ManualSeed(42)
		m, _ := NewModel(cnnSpec(1, 8, 8, 3, []int{4}, 8, 0.5), "cpu")
		defer m.Close()
		o, _ := NewSGD(m, 0.9, 1e-4, false)
		defer o.Close()
		r := rand.New(rand.NewPCG(9, 9))
		e := newEngine(t)
		for range 5 {
			x := randn(r, 8*64)
			y := []int64{0, 1, 2, 0, 1, 2, 0, 1}
			if _, err := trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{SoftCE: 1}, LR: 0.1},
				Input{X: x, N: 8, C: 1, H: 8, W: 8, Y: y}); err != nil {
				t.Fatal(err)
			}
		}
		s, _ := m.State().Copy()
		return s
	}
	var sa, sb []Named
	a.do(func() { sa = run() })
	b.do(func() { sb = run() })
	for i := range sa {
		if !bytes.Equal(sa[i].Data, sb[i].Data) {
			t.Fatalf("%s differs between identical seeded runs", sa[i].Name)
		}
	}
}

func TestPeersAndTeacherLearn(t *testing.T) {
	SetThreads(1)
	ManualSeed(3)
	spec := mlpSpec(1, 1, 2, 2, 16)
	var ms []*Model
	var os []*Optimizer
	for range 3 {
		m, _ := NewModel(spec, "cpu")
		o, _ := NewSGD(m, 0.9, 0, false)
		defer m.Close()
		defer o.Close()
		ms, os = append(ms, m), append(os, o)
	}
	teacher, peers, popts := ms[0], ms[1:], os[1:]
	r := rand.New(rand.NewPCG(4, 4))
	batch := func() ([]float32, []int64) {
		x := make([]float32, 64*2)
		y := make([]int64, 64)
		for i := range y {
			y[i] = int64(r.IntN(2))
			x[2*i] = float32(2*float64(y[i])-1) + float32(r.NormFloat64()*0.3)
			x[2*i+1] = float32(r.NormFloat64())
		}
		return x, y
	}
	var first, last stepResult
	e := newEngine(t)
	for i := range 60 {
		x, y := batch()
		in := Input{X: x, N: 64, C: 1, H: 1, W: 2, Y: y}
		if _, err := trainStep(e, &Step{Models: ms[:1], Optims: os[:1], Coefs: Coefs{HardCE: 1}, LR: 0.1}, in); err != nil {
			t.Fatal(err)
		}
		res, err := trainStep(e, &Step{Models: peers, Optims: popts, Teacher: teacher,
			Coefs: Coefs{HardCE: 0.5, KD: 0.5, KDTemperature: 2, Mutual: 1}, LR: 0.1}, in)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = res
		}
		last = res
	}
	for p := range 2 {
		if !(last.Loss[p] < first.Loss[p]) || last.Correct[p] < 58 {
			t.Errorf("peer %d: loss %.3f → %.3f, last batch %d/64 correct", p, first.Loss[p], last.Loss[p], last.Correct[p])
		}
	}
	if _, err := trainStep(e, &Step{Models: peers, Optims: popts, Coefs: Coefs{KD: 1, KDTemperature: 1}, LR: 0.1},
		Input{X: make([]float32, 2), N: 1, C: 1, H: 1, W: 2, Y: []int64{0}}); err == nil {
		t.Error("distillation without a teacher accepted")
	}
}

// TestRMSPropUpdate checks one RMSProp step (TensorFlow's form, with
// momentum and weight decay) from given mean squares and momentum buffers
// on a linear model: the gradient of the logits (internal/lossref) times
// the inputs.
func TestRMSPropUpdate(t *testing.T) {
	const n, d, c = 3, 4, 3
	ManualSeed(6)
	m, err := NewModel(mlpSpec(1, 1, d, c), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const lr, rho, eps, mom, wd = 0.05, 0.9, 1.0, 0.9, 0.01
	o, err := NewOptimizer(m, Rule{1, "rmsprop"}, []float64{rho, eps, mom, wd})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	st, err := o.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 4 || st[0].Name != "fc.weight.square_avg" || st[2].Name != "fc.weight.momentum_buffer" {
		t.Fatalf("optimizer state %v", st)
	}
	if f := math.Float32frombits(uint32(st[0].Data[0]) | uint32(st[0].Data[1])<<8 | uint32(st[0].Data[2])<<16 | uint32(st[0].Data[3])<<24); f != 1 {
		t.Errorf("mean squares start at %v, want 1 (TensorFlow)", f)
	}
	r := rand.New(rand.NewPCG(3, 3))
	state := map[string]Named{}
	init := map[string][]float32{}
	for _, s := range st {
		v := make([]float32, len(s.Data)/4)
		for i := range v {
			v[i] = float32(r.Float64())
			binary.LittleEndian.PutUint32(s.Data[4*i:], math.Float32bits(v[i]))
		}
		init[s.Name] = v
		state[s.Name] = s
	}
	if err := o.State().Load(state); err != nil {
		t.Fatal(err)
	}
	W, b, after, gW, gb := linearStep(t, m, o, randn(r, n*d), []int64{1, 0, 2}, c, lossref.Coefs{HardCE: 1}, lr)
	check := func(name string, p0, p1 []float32, g []float64) {
		for i := range p0 {
			dd := g[i] + wd*float64(p0[i])
			ms := rho*float64(init[name+".square_avg"][i]) + (1-rho)*dd*dd
			mo := mom*float64(init[name+".momentum_buffer"][i]) + lr*dd/math.Sqrt(ms+eps)
			if want := float64(p0[i]) - mo; math.Abs(float64(p1[i])-want) > 1e-6 {
				t.Fatalf("%s[%d] = %.7f, want %.7f", name, i, p1[i], want)
			}
		}
	}
	check("fc.weight", W, after["fc.weight"], gW)
	check("fc.bias", b, after["fc.bias"], gb)
	if _, err := NewOptimizer(m, Rule{1, "rmsprop"}, []float64{1.5, 1, 0, 0}); err == nil {
		t.Error("decay 1.5 accepted")
	}
}

// TestNewOptimizerChecksTheRule: the shim refuses a rule number it lacks,
// a name that is not its rule's, and a parameter count not the rule's,
// each naming what it has; what the trainer's registry relies on to find
// a table out of step with optim.hpp.
func TestNewOptimizerChecksTheRule(t *testing.T) {
	m, err := NewModel(mlpSpec(1, 1, 4, 3), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		r    Rule
		v    []float64
		want string
	}{
		{Rule{99, "sgd"}, []float64{0, 0, 0}, "optimizer kind 99: this shim has kinds 0 to"},
		{Rule{-1, "sgd"}, []float64{0, 0, 0}, "optimizer kind -1: this shim has kinds 0 to"},
		{Rule{1, "sgd"}, []float64{0, 0, 0}, "optimizer kind 1 is rmsprop in this shim, not sgd"},
		{Rule{0, "sgd"}, []float64{0, 0}, "sgd takes 3 parameters, not 2"},
		{Rule{0, "sgd"}, nil, "sgd takes 3 parameters, not 0"},
		{Rule{0, "sgd"}, []float64{math.NaN(), 0, 0}, "sgd: a parameter is NaN"},
		{Rule{0, "sgd"}, []float64{0, 0, 1}, "Nesterov momentum requires a momentum > 0"},
		{Rule{5, "nadam"}, []float64{0.9, 0.999, 1e-8, 0, -1}, "NAdam needs momentum decay >= 0"},
	} {
		o, err := NewOptimizer(m, tc.r, tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			o.Close()
			t.Errorf("NewOptimizer(%v, %v): %v, want an error containing %q", tc.r, tc.v, err, tc.want)
		}
	}
}
