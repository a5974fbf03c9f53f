//go:build cgo

package torch

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// engineNet builds the same small CNN (batch norm, so the forward pass
// changes buffers too) with its optimizer, seeded.
func engineNet(t *testing.T, channelsLast bool) (*Model, *Optimizer) {
	t.Helper()
	ManualSeed(11)
	m, err := NewModel(cnnSpec(3, 8, 8, 4, []int{4}, 8, 0), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	if channelsLast {
		if err := m.ChannelsLast(); err != nil {
			t.Fatal(err)
		}
	}
	o, err := NewSGD(m, 0.9, 1e-4, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close(); m.Close() })
	return m, o
}

type engineBatch struct {
	x8 []uint8
	x  []float32 // x8 normalised on the host, as trainer/data does
	y  []int64
}

var engMean, engStd = []float32{0.4, 0.5, 0.6}, []float32{0.2, 0.25, 0.3}

func newEngineBatch(r *rand.Rand, n int) engineBatch {
	b := engineBatch{x8: make([]uint8, n*3*64), x: make([]float32, n*3*64), y: make([]int64, n)}
	for i := range b.x8 {
		b.x8[i] = uint8(r.IntN(256))
		c := (i / 64) % 3
		b.x[i] = float32(b.x8[i])*(1/(255*engStd[c])) + (-engMean[c] / engStd[c])
	}
	for i := range b.y {
		b.y[i] = int64(r.IntN(4))
	}
	return b
}

func maxDiff(a, b map[string][]float32) (string, float64) {
	worst, name := 0.0, ""
	for k, va := range a {
		for i := range va {
			if d := math.Abs(float64(va[i] - b[k][i])); d > worst || math.IsNaN(d) {
				worst, name = d, k
			}
		}
	}
	return name, worst
}

// stepResult is what one training step reported: each peer's batch loss
// and top-1 hits, and the examples (of the global batch with a Group).
type stepResult struct {
	Loss    []float32
	Correct []int64
	N       int64
}

// trainStep stages in on e, runs s on it and reads the step's metrics: one
// step of lcl train's path, with its figures at once.
func trainStep(e *Engine, s *Step, in Input) (stepResult, error) {
	if err := e.Put(in); err != nil {
		return stepResult{}, err
	}
	if _, err := e.Train(s, 0); err != nil {
		return stepResult{}, err
	}
	m, err := e.Metrics(len(s.Models))
	r := stepResult{Loss: make([]float32, len(m.LossSum)), Correct: m.Correct, N: m.N}
	for i, l := range m.LossSum {
		r.Loss[i] = float32(l / float64(max(m.N, 1)))
	}
	return r, err
}

// evalBatch stages in on e and evaluates m on it.
func evalBatch(e *Engine, m *Model, in Input, logits, features bool) (EvalResult, error) {
	if err := e.Put(in); err != nil {
		return EvalResult{}, err
	}
	return e.Eval(m, logits, features)
}

// newEngine is a CPU engine for float32 batches, closed with the test.
func newEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine("cpu", EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// Prefetching (two batches staged) trains as staging one batch at a time
// does: the same parameters after several steps (bit-identical with
// float32 input), the same summed loss and hits, and Metrics resets them;
// uint8 input normalised on the device agrees with the host normalisation.
func TestEnginePrefetchAndUint8(t *testing.T) {
	SetThreads(1)
	r := rand.New(rand.NewPCG(3, 4))
	batches := []engineBatch{newEngineBatch(r, 6), newEngineBatch(r, 6), newEngineBatch(r, 5)}
	w := []float32{1, 2, 0.5, 1, 1, 3}
	ref, refO := engineNet(t, false)
	refE := newEngine(t)
	var lossSum float64
	var correct int64
	for i, b := range batches {
		ManualSeed(uint64(100 + i))
		res, err := trainStep(refE, &Step{Models: []*Model{ref}, Optims: []*Optimizer{refO}, Coefs: Coefs{SoftCE: 1}, LR: 0.05},
			Input{N: len(b.y), C: 3, H: 8, W: 8, X: b.x, Y: b.y, Weights: w[:len(b.y)]})
		if err != nil {
			t.Fatal(err)
		}
		lossSum += float64(res.Loss[0]) * float64(len(b.y))
		correct += res.Correct[0]
	}
	for _, u8 := range []bool{false, true} {
		m, o := engineNet(t, false)
		e, err := NewEngine("cpu", EngineOptions{Mean: engMean, Std: engStd})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		put := func(b engineBatch) {
			in := Input{N: len(b.y), C: 3, H: 8, W: 8, Y: b.y, Weights: w[:len(b.y)]}
			if u8 {
				in.X8 = b.x8
			} else {
				in.X = b.x
			}
			if err := e.Put(in); err != nil {
				t.Fatal(err)
			}
		}
		put(batches[0])
		for i := range batches {
			if i+1 < len(batches) {
				put(batches[i+1]) // prefetch: two staged
			}
			ManualSeed(uint64(100 + i))
			if _, err := e.Train(&Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{SoftCE: 1}, LR: 0.05}, 0); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.Metrics(1)
		if err != nil {
			t.Fatal(err)
		}
		if got.N != 17 || got.Correct[0] != correct || math.Abs(got.LossSum[0]-lossSum) > 1e-4*math.Abs(lossSum) {
			t.Errorf("u8=%v: metrics %+v, want loss sum %v, %d correct of 17", u8, got, lossSum, correct)
		}
		if again, _ := e.Metrics(1); again.N != 0 || again.LossSum[0] != 0 {
			t.Errorf("metrics not reset: %+v", again)
		}
		a, b := stateFloats(t, m), stateFloats(t, ref)
		if name, d := maxDiff(a, b); (!u8 && d != 0) || d > 1e-5 {
			t.Errorf("u8=%v: %s differs from one batch at a time by %g", u8, name, d)
		}
	}
}

// Loss scaling (the fp16 rule, exercised in float32): a power-of-two scale
// changes nothing; a scale that overflows the gradients skips the update
// and leaves parameters and momentum as they were.
func TestEngineLossScaleAndSkip(t *testing.T) {
	SetThreads(1)
	r := rand.New(rand.NewPCG(5, 6))
	b := newEngineBatch(r, 8)
	big := make([]float32, len(b.x)) // large inputs: large first-layer gradients
	for i, v := range b.x {
		big[i] = 1000 * v
	}
	step := func(x []float32, scale float64) (map[string][]float32, []Named, int) {
		m, o := engineNet(t, false)
		e, err := NewEngine("cpu", EngineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := e.Put(Input{N: 8, C: 3, H: 8, W: 8, X: x, Y: b.y}); err != nil {
			t.Fatal(err)
		}
		skipped, err := e.Train(&Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: 0.1}, scale)
		if err != nil {
			t.Fatal(err)
		}
		st, err := o.State().Copy()
		if err != nil {
			t.Fatal(err)
		}
		return stateFloats(t, m), st, skipped
	}
	plain, _, s0 := step(b.x, 0)
	scaled, _, s1 := step(b.x, 1024)
	if s0 != 0 || s1 != 0 {
		t.Fatalf("finite steps skipped: %d, %d", s0, s1)
	}
	if name, d := maxDiff(plain, scaled); d > 1e-6 {
		t.Errorf("scale 1024 changed %s by %g", name, d)
	}
	init, _ := engineNet(t, false)
	before := stateFloats(t, init)
	over, mom, s2 := step(big, 3e38) // gradients above 1.2 times 3e38 overflow float32
	if s2 != 1 {
		t.Fatalf("overflowing step: %d peers skipped, want 1", s2)
	}
	for name, v := range before {
		if strings.Contains(name, "running") || strings.Contains(name, "num_batches") {
			continue // the forward pass still updates batch-norm statistics (as in PyTorch)
		}
		if !equalF(v, over[name]) {
			t.Errorf("skipped step changed %s", name)
		}
	}
	for _, s := range mom {
		if bytes.Count(s.Data, []byte{0}) != len(s.Data) {
			t.Errorf("skipped step changed momentum %s", s.Name)
		}
	}
}

func equalF(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// bf16 autocast on the CPU and channels-last train to the fp32 figures
// within bf16 rounding; parameters stay float32; fp16 is refused on the CPU.
func TestEngineBF16AndChannelsLast(t *testing.T) {
	SetThreads(1)
	r := rand.New(rand.NewPCG(7, 8))
	b := newEngineBatch(r, 8)
	run := func(p Precision, cl bool) (map[string][]float32, float64, []DType) {
		m, o := engineNet(t, cl)
		e, err := NewEngine("cpu", EngineOptions{Precision: p, ChannelsLast: cl, Mean: engMean, Std: engStd})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for range 3 {
			if err := e.Put(Input{N: 8, C: 3, H: 8, W: 8, X8: b.x8, Y: b.y}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Train(&Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{SoftCE: 0.5, HardCE: 0.5}, LR: 0.1}, 0); err != nil {
				t.Fatal(err)
			}
		}
		mt, err := e.Metrics(1)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := m.State().Copy()
		var dts []DType
		for _, s := range st {
			dts = append(dts, s.DType)
		}
		// Evaluation under the engine's precision too.
		if err := e.Put(Input{N: 8, C: 3, H: 8, W: 8, X8: b.x8, Y: b.y}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Eval(m, true, false); err != nil {
			t.Fatal(err)
		}
		return stateFloats(t, m), mt.LossSum[0] / float64(mt.N), dts
	}
	ref, refLoss, refTypes := run(FP32, false)
	for _, c := range []struct {
		p   Precision
		cl  bool
		tol float64
	}{{FP32, true, 1e-5}, {BF16, false, 0.05}, {BF16, true, 0.05}} {
		got, loss, types := run(c.p, c.cl)
		if name, d := maxDiff(ref, got); d > c.tol {
			t.Errorf("%v channels-last=%v: %s differs from fp32 by %g", c.p, c.cl, name, d)
		}
		if math.Abs(loss-refLoss) > 0.05*refLoss || math.IsNaN(loss) {
			t.Errorf("%v channels-last=%v: mean loss %v, fp32 %v", c.p, c.cl, loss, refLoss)
		}
		for i := range types {
			if types[i] != refTypes[i] {
				t.Errorf("%v: state dtype %v, want %v", c.p, types[i], refTypes[i])
			}
		}
	}
	if _, err := NewEngine("cpu", EngineOptions{Precision: FP16}); err == nil || !strings.Contains(err.Error(), "fp16 needs a CUDA") {
		t.Errorf("fp16 on the CPU: %v", err)
	}
}

func TestEngineRefusals(t *testing.T) {
	e, err := NewEngine("cpu", EngineOptions{Mean: []float32{0.5}, Std: []float32{0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m, o := engineNet(t, false)
	if _, err := e.Train(&Step{Models: []*Model{m}, Optims: []*Optimizer{o}}, 0); err == nil {
		t.Error("train without a staged batch succeeded")
	}
	x8 := make([]uint8, 2*3*64)
	if err := e.Put(Input{N: 2, C: 3, H: 8, W: 8, X8: x8, Y: []int64{0, 1}}); err == nil || !strings.Contains(err.Error(), "normalisation for 1") {
		t.Errorf("uint8 batch with the wrong channel count: %v", err)
	}
	if err := e.Put(Input{N: 2, C: 3, H: 8, W: 8, X: make([]float32, 5), Y: []int64{0, 1}}); err == nil {
		t.Error("short batch accepted")
	}
	if _, err := NewEngine("cpu", EngineOptions{Mean: []float32{0.5}, Std: []float32{0}}); err == nil {
		t.Error("zero std accepted")
	}
	for range 2 {
		if err := e.Put(Input{N: 1, C: 1, H: 8, W: 8, X: make([]float32, 64), Y: []int64{0}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Put(Input{N: 1, C: 1, H: 8, W: 8, X: make([]float32, 64), Y: []int64{0}}); err == nil {
		t.Error("a third staged batch accepted")
	}
	e.Close()
	e.Close() // idempotent
	for name, call := range map[string]func() error{
		"Put":     func() error { return e.Put(Input{N: 1, C: 1, H: 8, W: 8, X: make([]float32, 64), Y: []int64{0}}) },
		"Train":   func() error { _, err := e.Train(&Step{Models: []*Model{m}, Optims: []*Optimizer{o}}, 0); return err },
		"Metrics": func() error { _, err := e.Metrics(1); return err },
		"Eval":    func() error { _, err := e.Eval(m, false, false); return err },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	// A batch without labels evaluates (logits, no figures) but does not
	// train.
	unlabelled := Input{N: 2, C: 3, H: 8, W: 8, X: make([]float32, 2*3*64)}
	if ev, err := evalBatch(newEngine(t), m, unlabelled, true, false); err != nil || len(ev.Logits) != 2*4 || ev.LossSum != 0 {
		t.Errorf("evaluation without labels: %d logits, loss sum %v, %v", len(ev.Logits), ev.LossSum, err)
	}
	if _, err := trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}},
		unlabelled); err == nil || !strings.Contains(err.Error(), "without labels") {
		t.Errorf("training without labels: %v", err)
	}
	// A closed model given to a live engine.
	e2, _ := NewEngine("cpu", EngineOptions{})
	defer e2.Close()
	cm, co := engineNet(t, false)
	co.Close()
	cm.Close()
	if err := e2.Put(Input{N: 2, C: 3, H: 8, W: 8, X: make([]float32, 2*3*64), Y: []int64{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Train(&Step{Models: []*Model{cm}, Optims: []*Optimizer{co}}, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("train of a closed model: %v", err)
	}
}
