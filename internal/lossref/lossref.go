// Package lossref is the reference of lcl's training loss (docs/trainer.md,
// "Losses"): a plain float64 computation of one model's batch loss and of
// its gradient with respect to the model's logits, each term derived by hand
// from the documented formula. The trainer computes the loss with libtorch
// (trainer/torch); tests hold that computation, and the strategies' plans,
// against this one. Nothing in lcl trains with it.
//
// Per example i, with p = softmax(z_i), the terms and their gradients with
// respect to z_i are
//
//	soft   −Σ_j T[y_i,j] log p_j                 p·ΣT[y_i] − T[y_i]
//	hard   −log p_{y_i}                          p − onehot(y_i)
//	kd     τ²·KL(q ‖ s), q = softmax(t_i/τ), s = softmax(z_i/τ)
//	                                             τ·(s − q)
//	mutual mean over the other peers k of KL(r_k ‖ p), r_k = softmax(peer_k,i)
//	                                             mean_k (p − r_k)
//
// (the KD gradient: τ²·(1/τ)·(s − q), since Σq = 1; the peers' r_k are
// constants). The batch loss is mean_i l_i, or Σ_i w_i l_i / Σ_i w_i with
// per-example weights, and 0 when every weight is 0; its gradient is the
// same combination of the examples' gradients.
package lossref

import (
	"fmt"
	"math"

	"github.com/lcl-project/lcl/internal/coefs"
)

// Coefs weighs the terms; KDTemperature is τ (≤ 0 means 1). The one Go form
// (internal/coefs); a term this reference does not compute (the group term,
// tested against its own reference) is refused, not dropped.
type Coefs = coefs.Coefs

// Input is one model's batch.
type Input struct {
	Logits  [][]float64 // n rows of C logits
	Labels  []int
	Targets [][]float64   // C rows of C: row y is the target of label y; nil = one-hot
	Weights []float64     // per example; nil = uniform
	Teacher [][]float64   // the teacher's logits (n×C), needed when KD != 0
	Peers   [][][]float64 // the other peers' logits (each n×C), for Mutual
	Coefs
}

// LogSoftmax returns log softmax(z/T).
func LogSoftmax(z []float64, T float64) []float64 {
	m := math.Inf(-1)
	for _, x := range z {
		m = math.Max(m, x/T)
	}
	sum := 0.0
	for _, x := range z {
		sum += math.Exp(x/T - m)
	}
	lse := m + math.Log(sum)
	out := make([]float64, len(z))
	for i, x := range z {
		out[i] = x/T - lse
	}
	return out
}

// Softmax returns softmax(z/T).
func Softmax(z []float64, T float64) []float64 {
	out := LogSoftmax(z, T)
	for i, x := range out {
		out[i] = math.Exp(x)
	}
	return out
}

// Loss returns the batch loss of in and its gradient with respect to
// in.Logits (same shape).
func Loss(in Input) (float64, [][]float64, error) {
	if err := in.check(); err != nil {
		return 0, nil, err
	}
	n := len(in.Logits)
	per := make([]float64, n)
	grad := make([][]float64, n)
	for i := range in.Logits {
		var err error
		if per[i], grad[i], err = in.example(i); err != nil {
			return 0, nil, err
		}
	}
	w := func(int) float64 { return 1 }
	den := float64(n)
	if in.Weights != nil {
		w = func(i int) float64 { return in.Weights[i] }
		den = 0
		for _, v := range in.Weights {
			den += v
		}
	}
	loss := 0.0
	for i := range n {
		scale := 0.0
		if den != 0 { // all weights 0: the batch contributes nothing
			scale = w(i) / den
		}
		loss += scale * per[i]
		for j := range grad[i] {
			grad[i][j] *= scale
		}
	}
	return loss, grad, nil
}

// check refuses an Input whose parts disagree on the number of examples.
func (in Input) check() error {
	for _, t := range in.Coefs.Terms() {
		switch t.Proto {
		case "soft_ce", "hard_ce", "kd", "temperature", "mutual":
		default:
			if t.Value != 0 {
				return fmt.Errorf("lossref: coefficient %s = %g: not a term of this reference", t.Proto, t.Value)
			}
		}
	}
	n := len(in.Logits)
	if n == 0 || len(in.Labels) != n {
		return fmt.Errorf("lossref: %d logit rows and %d labels", n, len(in.Labels))
	}
	if in.Weights != nil && len(in.Weights) != n {
		return fmt.Errorf("lossref: %d weights for %d examples", len(in.Weights), n)
	}
	if in.KD != 0 && len(in.Teacher) != n {
		return fmt.Errorf("lossref: kd without the teacher's logits")
	}
	for _, p := range in.Peers {
		if len(p) != n {
			return fmt.Errorf("lossref: a peer with %d logit rows for %d examples", len(p), n)
		}
	}
	return nil
}

// example is the unweighted loss of example i and its gradient with
// respect to the example's logits.
func (in Input) example(i int) (float64, []float64, error) {
	z := in.Logits[i]
	c, y := len(z), in.Labels[i]
	if y < 0 || y >= c {
		return 0, nil, fmt.Errorf("lossref: label %d of example %d outside [0,%d)", y, i, c)
	}
	logp := LogSoftmax(z, 1)
	p := Softmax(z, 1)
	d := make([]float64, c)
	per := 0.0
	if in.SoftCE != 0 {
		row := make([]float64, c)
		row[y] = 1
		if in.Targets != nil {
			row = in.Targets[y]
		}
		sum := 0.0
		for j := range c {
			per -= in.SoftCE * row[j] * logp[j]
			sum += row[j]
		}
		for j := range c {
			d[j] += in.SoftCE * (p[j]*sum - row[j])
		}
	}
	if in.HardCE != 0 {
		per -= in.HardCE * logp[y]
		for j := range c {
			d[j] += in.HardCE * p[j]
		}
		d[y] -= in.HardCE
	}
	if in.KD != 0 {
		tau := in.KDTemperature
		if tau <= 0 {
			tau = 1
		}
		q, logq := Softmax(in.Teacher[i], tau), LogSoftmax(in.Teacher[i], tau)
		s, logs := Softmax(z, tau), LogSoftmax(z, tau)
		kl := 0.0
		for j := range c {
			if q[j] > 0 { // 0·log 0 = 0
				kl += q[j] * (logq[j] - logs[j])
			}
			d[j] += in.KD * tau * (s[j] - q[j])
		}
		per += in.KD * tau * tau * kl
	}
	if in.Mutual != 0 && len(in.Peers) > 0 {
		k := float64(len(in.Peers))
		for _, peer := range in.Peers {
			r, logr := Softmax(peer[i], 1), LogSoftmax(peer[i], 1)
			kl := 0.0
			for j := range c {
				if r[j] > 0 {
					kl += r[j] * (logr[j] - logp[j])
				}
				d[j] += in.Mutual * (p[j] - r[j]) / k
			}
			per += in.Mutual * kl / k
		}
	}
	return per, d, nil
}
