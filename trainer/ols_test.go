package trainer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// The engine's class probabilities (online label smoothing's statistics)
// are what a hand computation makes of the logits the step saw: for the
// MLP (no batch norm, no dropout) the logits of training mode are the
// evaluation's before the update; softmax, argmax = label, summed by label.
// Two steps add up; a read resets them.
func TestClassProbsByHand(t *testing.T) {
	torch.SetThreads(1)
	torch.ManualSeed(4)
	m, err := torch.NewModel(mlp32(t), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o, err := torch.NewSGD(m, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	e := cpuEngine(t)
	r := rand.New(rand.NewPCG(2, 3))
	const n, c = 64, 4
	wantSums, wantCounts := make([]float64, c*c), make([]int64, c)
	for range 2 {
		x := make([]float32, n*36)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := make([]int64, n)
		for i := range y {
			y[i] = int64(r.IntN(c))
		}
		in := torch.Input{X: x, N: n, C: 1, H: 6, W: 6, Y: y}
		ev := evalOn(t, m, in, true)
		for i := range n {
			z := ev.Logits[i*c : (i+1)*c]
			best, mx := 0, z[0]
			for j, v := range z {
				if v > mx {
					best, mx = j, v
				}
			}
			if int64(best) != y[i] {
				continue
			}
			var sum float64
			for _, v := range z {
				sum += math.Exp(float64(v - mx))
			}
			for j, v := range z {
				wantSums[int(y[i])*c+j] += math.Exp(float64(v-mx)) / sum
			}
			wantCounts[y[i]]++
		}
		if err := e.Put(in); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Train(&torch.Step{Models: []*torch.Model{m}, Optims: []*torch.Optimizer{o}, Coefs: torch.Coefs{HardCE: 1},
			LR: 0.05, ClassProbs: true}, 0); err != nil {
			t.Fatal(err)
		}
	}
	sums, counts, err := e.ClassProbs(c)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for k := range c {
		total += counts[k]
		if counts[k] != wantCounts[k] {
			t.Errorf("class %d: %d correct, want %d", k, counts[k], wantCounts[k])
		}
	}
	if total == 0 {
		t.Fatal("no correct example: the comparison cannot tell")
	}
	for i := range sums {
		if math.Abs(sums[i]-wantSums[i]) > 1e-5 {
			t.Errorf("sums[%d] = %v, want %v", i, sums[i], wantSums[i])
		}
	}
	sums, counts, err = e.ClassProbs(c)
	if err != nil || sums[0] != 0 || counts[0] != 0 {
		t.Errorf("after a read: %v %v %v, want zeros", sums[:c], counts, err)
	}
}
