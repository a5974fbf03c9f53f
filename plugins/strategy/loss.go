package strategy

import (
	"fmt"
	"math"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// The reference loss formulas. The libtorch trainer computes the same terms
// on tensors; these pure Go versions define them, document them, and let the
// tests check hand computations. Every term is a per-sample sum over classes
// averaged over the batch — not PyTorch KLDivLoss's default mean over
// batch×classes, which silently divides by C.

// LogSoftmax returns log softmax(z/T).
func LogSoftmax(z []float64, T float64) []float64 {
	out := make([]float64, len(z))
	m := math.Inf(-1)
	for _, x := range z {
		m = math.Max(m, x/T)
	}
	sum := 0.0
	for _, x := range z {
		sum += math.Exp(x/T - m)
	}
	lse := m + math.Log(sum)
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

// CrossEntropy returns −Σ_j target_j·log softmax(z)_j.
func CrossEntropy(target, z []float64) float64 {
	lp := LogSoftmax(z, 1)
	ce := 0.0
	for j, t := range target {
		if t != 0 {
			ce -= t * lp[j]
		}
	}
	return ce
}

// KL returns KL(p ‖ softmax(z/T)) = Σ_j p_j (log p_j − log softmax(z/T)_j),
// with 0·log 0 = 0.
func KL(p, z []float64, T float64) float64 {
	lq := LogSoftmax(z, T)
	kl := 0.0
	for j, pj := range p {
		if pj > 0 {
			kl += pj * (math.Log(pj) - lq[j])
		}
	}
	return kl
}

// Batch is what a loss sees for one model: logits (one row per example),
// their labels, and the target matrix (nil = one-hot).
type Batch struct {
	Logits  [][]float64
	Labels  []int
	Weights []float64 // per example, nil = 1
}

// Loss is the reference loss of one model under a plan's coefficients:
//
//	l_i = SoftCE·CE(targets[y_i], z_i) + HardCE·CE(onehot(y_i), z_i)
//	      + KD·T²·KL(softmax(t_i/T) ‖ softmax(z_i/T))
//	      + Mutual·mean_peers KL(softmax(peer_i) ‖ softmax(z_i))
//	loss = mean_i l_i, or Σ_i w_i·l_i / Σ_i w_i with per-example weights
//
// teacher holds the teacher's logits (needed when KD > 0), peers the other
// models' logits (needed when Mutual > 0; treated as constants, averaged over
// peers as in DML with K > 2). This is exactly the trainer's loss
// (trainer/torch.Coefs).
func Loss(p *sdk.Plan, b Batch, teacher [][]float64, peers [][][]float64) (float64, error) {
	n := len(b.Logits)
	if n == 0 || len(b.Labels) != n {
		return 0, fmt.Errorf("loss: %d logit rows and %d labels", n, len(b.Labels))
	}
	if b.Weights != nil && len(b.Weights) != n {
		return 0, fmt.Errorf("loss: %d weights for %d examples", len(b.Weights), n)
	}
	if p.Coef.KD > 0 && len(teacher) != n {
		return 0, fmt.Errorf("loss: kd coefficient without teacher logits")
	}
	total, wsum := 0.0, 0.0
	for i, z := range b.Logits {
		c := len(z)
		y := b.Labels[i]
		onehot := make([]float64, c)
		onehot[y] = 1
		target := onehot
		if p.Targets != nil {
			target = p.Targets.Row(y)
		}
		l := 0.0
		if p.Coef.SoftCE != 0 {
			l += p.Coef.SoftCE * CrossEntropy(target, z)
		}
		if p.Coef.HardCE != 0 {
			l += p.Coef.HardCE * CrossEntropy(onehot, z)
		}
		if p.Coef.KD != 0 {
			T := p.Coef.Temperature
			l += p.Coef.KD * T * T * KL(Softmax(teacher[i], T), z, T)
		}
		if p.Coef.Mutual != 0 && len(peers) > 0 {
			m := 0.0
			for _, peer := range peers {
				m += KL(Softmax(peer[i], 1), z, 1)
			}
			l += p.Coef.Mutual * m / float64(len(peers))
		}
		w := 1.0
		if b.Weights != nil {
			w = b.Weights[i]
		}
		total += w * l
		wsum += w
	}
	if wsum == 0 {
		return 0, nil
	}
	return total / wsum, nil
}
