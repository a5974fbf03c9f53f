//go:build !cgo

package torch

// AdamOptions are Adam's settings (see the cgo build's documentation).
type AdamOptions struct {
	Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                      bool
}

func NewAdam(m *Model, o AdamOptions) (*Optimizer, error)  { return nil, ErrNoLibtorch }
func (o *Optimizer) SetClipNorm(maxNorm float64) error     { return ErrNoLibtorch }
func (m *Model) UpdateEMA(src *Model, decay float64) error { return ErrNoLibtorch }
