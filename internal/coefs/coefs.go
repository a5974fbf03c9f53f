// Package coefs holds the one Go form of the loss coefficients: the weights
// of the terms of the per-example training loss that a strategy's plan sets
// and the engine applies. Every layer uses this type (plugins/sdk.Coefs,
// curriculum.Coefs, trainer/torch.Coefs and internal/lossref.Coefs are
// aliases of it); the two forms that cross a boundary are derived from its
// fields' tags: the wire's (the proto message Coefficients, by the tag
// `proto`, plugins/internal/shim) and the C ABI's (the struct lt_coefs of
// trainer/torch/shim.h, by the tag `c`, in field order). Tests hold the
// proto message and the C header against this struct, so a term added here
// and not there (or there and not here) fails them.
//
// Adding a term is: a field here (with its two tags), the same field in
// plugins/proto/lcl.proto (a new number; regenerate lcl.pb.go) and in
// lt_coefs, and its use in trainer/torch/loss.hpp.
package coefs

import (
	"fmt"
	"reflect"
)

// Coefs weighs the terms of the per-example training loss of an example of
// class y with logits z, p = softmax(z):
//
//	SoftCE·(−Σ_j T_yj log p_j) + HardCE·(−log p_y) + Group·(−Σ_g W_yg log (p·Mᵀ)_g)
//	+ KD·τ²·KL(q_τ‖p_τ) + Mutual·mean_peers KL(p_peer‖p)
//	+ Cosine·Σ_c (cos(f, V_c) − cos(V_y, V_c))²
//	+ Consistency·Σ_{l≥1} JSD(p_{l−1}·A_l, softmax(z_l))
//
// with T the target matrix row of the label, M and W the class groups'
// membership and weights, q_τ and p_τ the teacher's and the model's softmax
// at temperature τ = KDTemperature (≤ 0 means 1), each peer's prediction
// treated as a constant, f the example's penultimate features and V the
// plan's fixed classifier (C×d, the model's head). Every term is summed over classes; the
// batch loss is the mean over examples, or Σ w_i l_i / Σ w_i with
// per-example weights.
//
// The levels' terms (HAF's) need the stage's levels (curriculum.Stage.Levels):
// level l's head gives logits z_l = f·ŵ_lᵀ + b_l (ŵ_l its unit weight rows),
// level 0 is the model's own head (p_0 = p), A_l sums level l−1's groups
// into level l's, and JSD(a, b) = ½[KL(a‖m) + KL(b‖m)] with m = ½(a + b)
// clamped to [1e-7, 1]. Two of them are batch terms, added to the batch
// loss, not to each example's:
//
//	Dissimilar·Σ_{1≤l<L} mean_{(a,b)} (3 − JSD(p_l[a], p_l[b]))
//	− Geometric·Σ_{l≥1} mean_g cos(ŵ_l[g], Σ_{h∈g} ŵ_{l−1}[h])
//
// over the pairs (a, b) of consecutive examples of the batch in different
// groups of level l, and level l's groups g with their children h at l−1
// (ŵ_0 the model's own head's unit rows; L the coarsest level; the margin
// 3 exceeds every JSD, log 2, so HAF's hinge max(3 − JSD, 0) is always
// 3 − JSD).
type Coefs struct {
	SoftCE float64 `proto:"soft_ce" c:"soft"`
	HardCE float64 `proto:"hard_ce" c:"hard"`
	KD     float64 `proto:"kd" c:"kd"`
	// KDTemperature is τ; on the wire `temperature` (unrenamed, so plugins
	// in other languages keep their code).
	KDTemperature float64 `proto:"temperature" c:"kd_temp"`
	Mutual        float64 `proto:"mutual" c:"mutual"`
	// Group weighs the group term of the plan's class groups.
	Group float64 `proto:"group" c:"group"`
	// Cosine weighs the cosine term of the plan's fixed classifier V:
	// Σ_c (cos(f, V_c) − cos(V_y, V_c))², f the example's features
	// (HAFrame's loss).
	Cosine float64 `proto:"cosine" c:"cosine"`
	// Consistency weighs the Jensen–Shannon consistency of each level's
	// head with the level below summed into its groups (HAF's).
	Consistency float64 `proto:"consistency" c:"consistency"`
	// Dissimilar weighs the margin term between consecutive examples of
	// different groups (HAF's; a batch term).
	Dissimilar float64 `proto:"dissimilar" c:"dissimilar"`
	// Geometric weighs the alignment of each level's weight rows with the
	// sums of its children's, subtracted (HAF's; a batch term).
	Geometric float64 `proto:"geometric" c:"geometric"`
}

// Term is one coefficient: its names on the wire and in the C struct, and
// its value.
type Term struct {
	Proto, C string
	Value    float64
}

// Terms lists the coefficients in field order (the order of lt_coefs).
func (c Coefs) Terms() []Term {
	v := reflect.ValueOf(c)
	t := v.Type()
	out := make([]Term, t.NumField())
	for i := range out {
		f := t.Field(i)
		out[i] = Term{Proto: f.Tag.Get("proto"), C: f.Tag.Get("c"), Value: v.Field(i).Float()}
	}
	return out
}

// Set sets the coefficient whose wire name is proto; an unknown name is an
// error.
func (c *Coefs) Set(proto string, value float64) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("proto") == proto {
			v.Field(i).SetFloat(value)
			return nil
		}
	}
	return fmt.Errorf("coefs: no coefficient with the wire name %q", proto)
}

// Float32s are the coefficients in field order as float32: the values of
// lt_coefs, whose fields are all C floats in the same order.
func (c Coefs) Float32s() []float32 {
	terms := c.Terms()
	out := make([]float32, len(terms))
	for i, t := range terms {
		out[i] = float32(t.Value)
	}
	return out
}
