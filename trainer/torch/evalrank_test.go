//go:build cgo

package torch

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// TestEvalTopKAndRisk: the k best classes the engine returns are the
// logits sorted, and conditional risk minimisation's are the classes
// sorted by Σ_i softmax(z)_i·D[i][j], computed here by brute force in
// float64 from the same logits, for an asymmetric cost D.
func TestEvalTopKAndRisk(t *testing.T) {
	m, _ := engineNet(t, false)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(3, 9))
	const n, c = 24, 4
	b := newEngineBatch(r, n)
	cost := make([]float32, c*c)
	for i := range cost {
		if i/c != i%c {
			cost[i] = float32(r.IntN(7) + 1)
		}
	}
	d, err := NewTensor(cost, []int64{c, c}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := e.Put(Input{N: n, C: 3, H: 8, W: 8, X: b.x, Y: b.y}); err != nil {
		t.Fatal(err)
	}
	ev, err := e.EvalWith(m, EvalRequest{Logits: true, TopK: c, Cost: d})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.TopK) != n*c || len(ev.RiskTopK) != n*c {
		t.Fatalf("%d top-k and %d risk indices, want %d", len(ev.TopK), len(ev.RiskTopK), n*c)
	}
	crmDiffers := 0
	for x := range n {
		z := ev.Logits[x*c : (x+1)*c]
		byLogit := []int{0, 1, 2, 3}
		sort.SliceStable(byLogit, func(a, b int) bool { return z[byLogit[a]] > z[byLogit[b]] })
		var p [c]float64
		var sum float64
		for i := range c {
			p[i] = math.Exp(float64(z[i]))
			sum += p[i]
		}
		risk := make([]float64, c)
		for j := range c {
			for i := range c {
				risk[j] += p[i] / sum * float64(cost[i*c+j])
			}
		}
		byRisk := []int{0, 1, 2, 3}
		sort.SliceStable(byRisk, func(a, b int) bool { return risk[byRisk[a]] < risk[byRisk[b]] })
		for k := range c {
			if got := int(ev.TopK[x*c+k]); got != byLogit[k] {
				t.Errorf("example %d: top-k %v, want %v (logits %v)", x, ev.TopK[x*c:(x+1)*c], byLogit, z)
				break
			}
			if got := int(ev.RiskTopK[x*c+k]); got != byRisk[k] {
				t.Errorf("example %d: risk ranking %v, want %v (risks %v)", x, ev.RiskTopK[x*c:(x+1)*c], byRisk, risk)
				break
			}
		}
		if byRisk[0] != byLogit[0] {
			crmDiffers++
		}
	}
	if crmDiffers == 0 {
		t.Errorf("CRM's choice equals the argmax on every example: the test cannot tell them apart")
	}
	t.Logf("CRM's choice differs from the argmax on %d of %d examples", crmDiffers, n)
}

// TestEvalTopKRefusals: a k beyond the class count, a cost without k and
// a cost of the wrong shape are refused with the reason.
func TestEvalTopKRefusals(t *testing.T) {
	m, _ := engineNet(t, false)
	e := newEngine(t)
	b := newEngineBatch(rand.New(rand.NewPCG(1, 1)), 4)
	in := Input{N: 4, C: 3, H: 8, W: 8, X: b.x, Y: b.y}
	d3, err := NewTensor(make([]float32, 9), []int64{3, 3}, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	for _, tc := range []struct {
		name string
		q    EvalRequest
		want string
	}{
		{"k > classes", EvalRequest{TopK: 5}, "top-5 of 4 classes"},
		{"cost without k", EvalRequest{Cost: d3}, "a cost matrix without TopK"},
		{"cost 3×3", EvalRequest{TopK: 2, Cost: d3}, "4x4 float32"},
	} {
		if err := e.Put(in); err != nil {
			t.Fatal(err)
		}
		_, err := e.EvalWith(m, tc.q)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
		for len(e.staged) > 0 { // a refusal before the engine leaves the batch staged
			if _, err := e.Eval(m, false, false); err != nil {
				t.Fatal(err)
			}
		}
	}
}
