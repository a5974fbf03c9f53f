package strategy

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// HAFrame is the hierarchy-aware frame of Liang & Davis (ICCV 2023,
// "Inducing Neural Collapse to a Fixed Hierarchy-Aware Frame for Reducing
// Mistake Severity"; code ltong1130ztr/HAFrame): the model's last layer is
// fixed to class vectors V whose pairwise cosines are
//
//	S_ij = (1 − s_min)·exp(−γ·d_ij / max d) + s_min
//
// of the classes' hierarchical distances d, and an example of class y with
// features f is trained on
//
//	β·(−log softmax(f·Vᵀ)_y) + α·Σ_c (cos(f, V_c) − S_yc)²
//
// (their MixedLoss_CEandGeneralSCSL, loss mixed-ce-gscsl: batch means of
// both). s_min is the most negative similarity, of 100 evenly spaced from
// −1/(C−1) to −1, whose S is positive semi-definite (eigenvalues below
// 1e-6 in magnitude count as 0), and V = U·Λ^½ of S's eigendecomposition:
// V·Vᵀ = S. The trainer maps V into the model's feature space by a fixed
// random orthonormal map, as their solver does, so V's cosines stay S's.
// With α ≤ 1, β = 1 − α; with α > 1, β = 1 (their mixing_ratio_scheduler's
// constant schedule).
//
// The distance is the single-linkage (cophenetic) distance of d = 1 − s,
// the hierarchy hxe walks too: on the lca source's height form of a tree,
// s = 1 − height(LCA)/H, that is d itself, and d/max d the LCA height over
// the highest one's, the distance their code reads (MBM's). On a DAG's
// heights (WordNet's, for Quick, Draw!'s classes) d is no ultrametric, and
// for no s_min is S positive semi-definite (their solver returns +Inf
// there); its subdominant ultrametric, the tree's heights, always has one.
// lcl's cosine
// targets are the cosines of V's rows, which equal S up to the eigenvalues
// clipped to 0 (at most 1e-6 apart): the engine's cosine term needs the
// classifier alone.
type HAFrame struct {
	base
	classifier *sdk.Matrix
	alpha      float64
}

var haframeParams = []sdk.Param{
	{Name: "alpha", Type: sdk.ParamFloat, Default: "0.4", Help: "weight α ≥ 0 of the cosine term; cross-entropy gets 1 − α (1 when α > 1) (paper: 0.4 on CIFAR-100 and iNat-19, 0.5 on FGVC-Aircraft and tieredImageNet)"},
	{Name: "haf-gamma", Type: sdk.ParamFloat, Default: "2", Help: "decay γ > 0 of the class vectors' cosines with hierarchical distance, S = (1 − s_min)·exp(−γ·d/max d) + s_min (paper: 2 on CIFAR-100, 5 iNat-19, 1 FGVC-Aircraft, 3 tieredImageNet)"},
	{Name: "frame-model", Type: sdk.ParamString, Default: "", Help: "architecture trained (default: the run's); its head must be one linear layer on features at least as wide as the classes; a built-in model's option proj=C gives it the paper's projection to C features of any sign (e.g. cnn:proj=345)"},
}

func (s *HAFrame) Describe(context.Context) (sdk.StrategyInfo, error) {
	return sdk.StrategyInfo{Name: "haframe", Version: Version,
		Summary: "HAFrame (Liang & Davis 2023): last layer fixed to hierarchy-aware class vectors, CE + cosine pull of the features",
		Params:  haframeParams, MaxPeers: 1, Stages: []string{"train"}, NeedsSimilarity: true}, nil
}

func (s *HAFrame) Begin(_ context.Context, run sdk.Run) ([]sdk.Stage, error) {
	if err := s.begin(run, haframeParams); err != nil {
		return nil, err
	}
	alpha, gamma := s.params.Float("alpha"), s.params.Float("haf-gamma")
	if !(alpha >= 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("alpha = %g, want a finite value ≥ 0", alpha)
	}
	if !(gamma > 0) || math.IsInf(gamma, 1) {
		return nil, fmt.Errorf("haf-gamma = %g, want a finite value > 0", gamma)
	}
	if run.Similarity == nil {
		return nil, fmt.Errorf("haframe needs a similarity matrix for the hierarchical distances (--source lca --form height, or --matrix)")
	}
	c := len(run.Classes)
	if c < 2 {
		return nil, fmt.Errorf("haframe needs at least 2 classes, not %d", c)
	}
	if err := sdk.ValidateSimilarity(run.Similarity, c); err != nil {
		return nil, fmt.Errorf("similarity matrix: %w", err)
	}
	S, _, err := HAFrameSimilarity(Subdominant(distances(run.Similarity, c)), gamma)
	if err != nil {
		return nil, err
	}
	s.classifier, err = HAFrameVectors(S)
	if err != nil {
		return nil, err
	}
	s.alpha = alpha
	s.stages = oneStage("train", run.Epochs, 1)
	s.stages[0].Model = s.params.String("frame-model")
	return s.stagesRead()
}

func (s *HAFrame) Plan(_ context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	if err := s.check(at); err != nil {
		return nil, err
	}
	beta := 1.0
	if s.alpha <= 1 {
		beta = 1 - s.alpha
	}
	return &sdk.Plan{Coefs: sdk.Coefs{HardCE: beta, Cosine: s.alpha}, Classifier: s.classifier}, nil
}

// distances is d = 1 − s of a c×c similarity matrix, symmetric with a zero
// diagonal.
func distances(sim *sdk.Matrix, c int) *mat.SymDense {
	d := mat.NewSymDense(c, nil)
	buf := make([]float32, c)
	for i := 0; i < c; i++ {
		row := sim.RowInto(i, buf)
		for j := i + 1; j < c; j++ {
			d.SetSym(i, j, 1-float64(row[j]))
		}
	}
	return d
}

// haframeEigenTol is the magnitude under which HAFrame's solver counts an
// eigenvalue as 0.
const haframeEigenTol = 1e-6

// HAFrameSimilarity is HAFrame's cosine matrix of the hierarchical
// distances d (symmetric, zero diagonal, some positive):
// S = (1 − s_min)·exp(−γ·d/max d) + s_min with s_min the most negative of
// 100 values evenly spaced from −1/(C−1) to −1 whose S is positive
// semi-definite.
func HAFrameSimilarity(d *mat.SymDense, gamma float64) (*mat.SymDense, float64, error) {
	c, _ := d.Dims()
	dmax := 0.0
	for i := 0; i < c; i++ {
		for j := i + 1; j < c; j++ {
			dmax = math.Max(dmax, d.At(i, j))
		}
	}
	if !(dmax > 0) {
		return nil, 0, fmt.Errorf("haframe: every pair of classes is at distance 0 (similarity 1): no hierarchy to build class vectors from")
	}
	at := func(smin float64) *mat.SymDense {
		s := mat.NewSymDense(c, nil)
		for i := 0; i < c; i++ {
			for j := i; j < c; j++ {
				s.SetSym(i, j, (1-smin)*math.Exp(-gamma*d.At(i, j)/dmax)+smin)
			}
		}
		return s
	}
	const samples = 100
	best := math.Inf(1)
	var eig mat.EigenSym
	for k := 0; k < samples; k++ {
		smin := -1/float64(c-1) + float64(k)*(-1+1/float64(c-1))/(samples-1)
		if !eig.Factorize(at(smin), false) {
			return nil, 0, fmt.Errorf("haframe: the eigendecomposition of the similarity matrix failed")
		}
		psd := true
		for _, w := range eig.Values(nil) {
			psd = psd && (w >= 0 || math.Abs(w) < haframeEigenTol)
		}
		if psd {
			best = math.Min(best, smin)
		}
	}
	if math.IsInf(best, 1) {
		return nil, 0, fmt.Errorf("haframe: no minimum similarity in [−1, −1/(C−1)] makes the class cosines positive semi-definite with haf-gamma %g: try another", gamma)
	}
	return at(best), best, nil
}

// HAFrameVectors are the C×C class vectors V = U·Λ^½ of a positive
// semi-definite S = U·Λ·Uᵀ (eigenvalues under 1e-6 in magnitude as 0):
// V·Vᵀ = S.
func HAFrameVectors(S *mat.SymDense) (*sdk.Matrix, error) {
	c, _ := S.Dims()
	var eig mat.EigenSym
	if !eig.Factorize(S, true) {
		return nil, fmt.Errorf("haframe: the eigendecomposition of the similarity matrix failed")
	}
	w := eig.Values(nil)
	var u mat.Dense
	eig.VectorsTo(&u)
	v := sdk.NewMatrix(c, c)
	for j, l := range w {
		if math.Abs(l) < haframeEigenTol {
			l = 0
		}
		if l < 0 {
			return nil, fmt.Errorf("haframe: the similarity matrix has eigenvalue %g < 0: not positive semi-definite", l)
		}
		r := math.Sqrt(l)
		for i := 0; i < c; i++ {
			v.Data[i*c+j] = float32(u.At(i, j) * r)
		}
	}
	return v, nil
}

// Subdominant is the single-linkage (cophenetic) distance of d: u_ij is the
// least, over the paths from i to j, of the path's largest step, the
// largest ultrametric at most d (d itself when d is one, as a tree's LCA
// heights are). It walks d's minimum spanning tree (Prim's, O(C²)) from
// every class.
func Subdominant(d *mat.SymDense) *mat.SymDense {
	c, _ := d.Dims()
	in := make([]bool, c)
	best := make([]float64, c)
	from := make([]int, c)
	adj := make([][]int, c)
	for i := range best {
		best[i], from[i] = math.Inf(1), -1
	}
	best[0] = 0
	for range c {
		v := -1
		for w := range c {
			if !in[w] && (v < 0 || best[w] < best[v]) {
				v = w
			}
		}
		in[v] = true
		if f := from[v]; f >= 0 {
			adj[v], adj[f] = append(adj[v], f), append(adj[f], v)
		}
		for w := range c {
			if !in[w] && d.At(v, w) < best[w] {
				best[w], from[w] = d.At(v, w), v
			}
		}
	}
	u := mat.NewSymDense(c, nil)
	top := make([]float64, c) // the largest step on the tree path from s
	stack := make([]int, 0, c)
	seen := make([]bool, c)
	for s := range c {
		clear(seen)
		top[s], seen[s] = 0, true
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[v] {
				if !seen[w] {
					seen[w] = true
					top[w] = math.Max(top[v], d.At(v, w))
					stack = append(stack, w)
				}
			}
		}
		for w := s + 1; w < c; w++ {
			u.SetSym(s, w, top[w])
		}
	}
	return u
}
