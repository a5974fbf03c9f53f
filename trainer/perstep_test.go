package trainer

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lcl-project/lcl/internal/lossref"
	"github.com/lcl-project/lcl/trainer/models"
	"github.com/lcl-project/lcl/trainer/safetensors"
	"github.com/lcl-project/lcl/trainer/torch"
)

// linearModels is the built-in registry plus "linear": flatten, then fc
// (logits = W·x + b), a model whose SGD step is easy to compute by hand.
func linearModels(t *testing.T) *models.Registry {
	t.Helper()
	r := models.Builtin()
	if err := r.Register(models.Model{Name: "linear", Doc: "fc only", Build: func(in models.Input, _ models.Options) (torch.Spec, error) {
		return models.MLP{}.Build(in)
	}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// twoPlans is a per-step strategy: plan 0 at step 0, plan 1 at every later
// step.
type twoPlans struct{ plans [2]Plan }

func (*twoPlans) Stages() []Stage { return []Stage{{Name: "train", PerStep: true}} }
func (p *twoPlans) Plan(_ context.Context, pc PlanContext) (Plan, error) {
	return p.plans[min(pc.Step, 1)], nil
}

// f32s reads a little-endian float32 tensor.
func f32s(b []byte) []float64 {
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

// sgdByHand is what plain SGD (no momentum, no weight decay) at rate lr
// does to a linear model W (C×D), b on the given batches, step s under plan
// plans[min(s,1)]: the per-step subset keeps the batch's examples it lists,
// the weights weigh them, the coefficients and targets make the loss
// (internal/lossref: the loss's gradient with respect to the logits, times
// the inputs).
func sgdByHand(t *testing.T, ds *memDS, W, b []float64, batches [][]int, plans [2]Plan, lr float64) ([]float64, []float64) {
	t.Helper()
	C, D := ds.classes, len(ds.x[0])
	W, b = append([]float64(nil), W...), append([]float64(nil), b...)
	for s, batch := range batches {
		p := plans[min(s, 1)]
		if s > 0 && p.Subset != nil {
			in := map[int]bool{}
			for _, i := range p.Subset {
				in[i] = true
			}
			var kept []int
			for _, i := range batch {
				if in[i] {
					kept = append(kept, i)
				}
			}
			batch = kept
		}
		li := lossref.Input{Coefs: lossref.Coefs{SoftCE: float64(p.Coefs.SoftCE), HardCE: float64(p.Coefs.HardCE)}}
		if p.Coefs == (Coefs{}) {
			li.SoftCE = 1
		}
		if p.Targets != nil {
			for y := range C {
				row := make([]float64, C)
				for j := range C {
					row[j] = float64(p.Targets[y*C+j])
				}
				li.Targets = append(li.Targets, row)
			}
		}
		for _, i := range batch {
			z := make([]float64, C)
			for c := range C {
				z[c] = b[c]
				for d := range D {
					z[c] += W[c*D+d] * float64(ds.x[i][d])
				}
			}
			li.Logits = append(li.Logits, z)
			li.Labels = append(li.Labels, ds.y[i])
			if p.Weights != nil {
				li.Weights = append(li.Weights, float64(p.Weights[i]))
			}
		}
		_, g, err := lossref.Loss(li)
		if err != nil {
			t.Fatal(err)
		}
		gW, gb := make([]float64, C*D), make([]float64, C)
		for k, i := range batch {
			for c := range C {
				gb[c] += g[k][c]
				for d := range D {
					gW[c*D+d] += g[k][c] * float64(ds.x[i][d])
				}
			}
		}
		for j := range W {
			W[j] -= lr * gW[j]
		}
		for j := range b {
			b[j] -= lr * gb[j]
		}
	}
	return W, b
}

// TestPerStepPlanAppliesToItsStep: a per-step strategy's plan for step 1
// (coefficients, weights, subset, one-hot targets) is the one step 1 trains
// with. One epoch of two steps of a linear model, compared with the same
// two SGD steps computed by hand; the hand computation that keeps step 0's
// plan for step 1 must differ, or the comparison proves nothing.
func TestPerStepPlanAppliesToItsStep(t *testing.T) {
	const n, C, lr = 16, 4, 0.5
	train := blobs(n, C, 3, 5)
	D := len(train.x[0])
	soft := make([]float32, C*C)
	for i := range C {
		for j := range C {
			soft[i*C+j] = 0.2 / float32(C-1)
		}
		soft[i*C+i] = 0.8
	}
	half := make([]int, 0, n/2)
	zeroOne := make([]float32, n)
	for i := range n {
		if i%2 == 0 {
			half = append(half, i)
		}
		zeroOne[i] = float32(i % 2)
	}
	first := Plan{Targets: soft, Coefs: Coefs{SoftCE: 1}}
	for _, tc := range []struct {
		name  string
		step1 Plan
	}{
		{"coefficients", Plan{Targets: soft, Coefs: Coefs{SoftCE: 100}}},
		{"weights", Plan{Targets: soft, Weights: zeroOne, Coefs: Coefs{SoftCE: 1}}},
		{"subset", Plan{Targets: soft, Subset: half, Coefs: Coefs{SoftCE: 1}}},
		{"one-hot", Plan{Coefs: Coefs{SoftCE: 1, HardCE: 0.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The initial weights, given (so the hand computation knows them).
			W0, b0 := make([]float64, C*D), make([]float64, C)
			var wb, bb bytes.Buffer
			for j := range W0 {
				W0[j] = float64(float32(0.1 * math.Sin(float64(3*j+1))))
				binary.Write(&wb, binary.LittleEndian, float32(W0[j]))
			}
			for j := range b0 {
				b0[j] = float64(float32(0.05 * float64(j)))
				binary.Write(&bb, binary.LittleEndian, float32(b0[j]))
			}
			init := filepath.Join(dir, "init.safetensors")
			var f bytes.Buffer
			if err := safetensors.Write(&f, []safetensors.Tensor{
				{Name: "fc.weight", DType: "F32", Shape: []int64{C, int64(D)}, Data: wb.Bytes()},
				{Name: "fc.bias", DType: "F32", Shape: []int64{C}, Data: bb.Bytes()},
			}, nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(init, f.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			// The training pass's batches, as the loader gives them.
			var batches [][]int
			loader := func(ctx context.Context, ds Examples, lc Pass) (Batches, error) {
				it, err := memLoader(ctx, ds, lc)
				if err != nil || !lc.Train {
					return it, err
				}
				return recorder{it, &batches}, nil
			}
			plans := [2]Plan{first, tc.step1}
			cfg := Config{Out: filepath.Join(dir, "run"), Model: "linear", Models: linearModels(t), Train: train,
				Test: blobs(8, C, 3, 6), BatchSource: loader, Planner: &twoPlans{plans}, Strategy: "per-step test", Seed: 1,
				Threads: 1, Init: init, NoCheckpoint: true,
				Optim: Optim{Epochs: 1, Batch: n / 2, Schedule: Schedule{Kind: "constant", LR: lr}}}
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if len(batches) != 2 {
				t.Fatalf("%d batches, want 2", len(batches))
			}
			b, err := os.ReadFile(filepath.Join(cfg.Out, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			ts, _, err := safetensors.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]float64{}
			for _, tt := range ts {
				got[tt.Name] = f32s(tt.Data)
			}
			W, bias := sgdByHand(t, train, W0, b0, batches, plans, lr)
			stale, staleB := sgdByHand(t, train, W0, b0, batches, [2]Plan{first, {Targets: first.Targets,
				Coefs: first.Coefs}}, lr)
			far := 0.0
			for j := range W {
				far = math.Max(far, math.Abs(W[j]-stale[j]))
			}
			if far < 1e-3 {
				t.Fatalf("step 1's plan changes the weights by %g only: the test cannot tell the plans apart", far)
			}
			for _, w := range []struct {
				name        string
				want, stale []float64
			}{{"fc.weight", W, stale}, {"fc.bias", bias, staleB}} {
				for j := range w.want {
					if d := math.Abs(got[w.name][j] - w.want[j]); d > 1e-5 {
						t.Fatalf("%s[%d] = %.7f, by hand %.7f (step 1 under step 0's plan: %.7f)", w.name, j, got[w.name][j],
							w.want[j], w.stale[j])
					}
				}
			}
			t.Logf("step 1's plan moves the weights by up to %.4f; lcl matches the hand computation", far)
		})
	}
}

// recorder records the example indices of each batch.
type recorder struct {
	Batches
	out *[][]int
}

func (r recorder) Next() (*MiniBatch, error) {
	b, err := r.Batches.Next()
	if err == nil {
		*r.out = append(*r.out, append([]int(nil), b.Index...))
	}
	return b, err
}
