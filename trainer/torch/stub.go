//go:build !cgo

package torch

// Without cgo the package still builds and vets; every operation reports
// ErrNoLibtorch.

import "time"

func Version() string   { return "" }
func Available() bool   { return false }
func SetThreads(n int)  {}
func Threads() int      { return 0 }
func ManualSeed(uint64) {}
func CUDADevices() int  { return 0 }

func CPUAllocStats() (AllocStats, bool) { return AllocStats{}, false }

type Tensor struct{ shape []int64 }

func NewTensor(data []float32, shape []int64, device string) (*Tensor, error) {
	return nil, ErrNoLibtorch
}
func (t *Tensor) Shape() []int64 { return nil }
func (t *Tensor) Close()         {}

type Model struct{ spec Spec }

func NewModel(spec Spec, device string) (*Model, error) { return nil, ErrNoLibtorch }
func (m *Model) Close()                                 {}
func (m *Model) Spec() Spec                             { return m.spec }
func (m *Model) FeatureDim() int                        { return 0 }
func (m *Model) NumParams() int64                       { return 0 }
func (m *Model) State() ([]Named, error)                { return nil, ErrNoLibtorch }
func (m *Model) LoadState(map[string]Named) error       { return ErrNoLibtorch }
func (m *Model) Eval(x []float32, n, c, h, w int, y []int64, logits, features bool) (EvalResult, error) {
	return EvalResult{}, ErrNoLibtorch
}

type Optimizer struct{}

func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	return nil, ErrNoLibtorch
}
func (o *Optimizer) Close()                           {}
func (o *Optimizer) State() ([]Named, error)          { return nil, ErrNoLibtorch }
func (o *Optimizer) LoadState(map[string]Named) error { return ErrNoLibtorch }

type Step struct {
	Models  []*Model
	Optims  []*Optimizer
	Teacher *Model
	X       []float32
	N       int
	C, H, W int
	Y       []int64
	Targets *Tensor
	Weights []float32
	Coefs   Coefs
	LR      float64
	Group   *Group
}

func TrainStep(s *Step) (StepResult, error) { return StepResult{}, ErrNoLibtorch }
func Loss(logits []float32, n, c int, y []int64, targets *Tensor, weights []float32, co Coefs, teacherLogits []float32) (float32, []float32, error) {
	return 0, nil, ErrNoLibtorch
}
func CrossEntropy(logits []float32, n, c int, y []int64) (float32, error) { return 0, ErrNoLibtorch }

type Group struct{ rank, size int }

type GroupConfig struct {
	Backend, Addr    string
	Port, Rank, Size int
	Timeout          time.Duration
	Interface        string
	AgentStore       bool
	Prefix           string
}

func NewGroup(GroupConfig) (*Group, error)           { return nil, ErrNoLibtorch }
func (g *Group) Rank() int                           { return g.rank }
func (g *Group) Size() int                           { return g.size }
func (g *Group) Close()                              {}
func (g *Group) Abort(string)                        {}
func (g *Group) BroadcastModel(*Model, bool) error   { return ErrNoLibtorch }
func (g *Group) BroadcastOptimizer(*Optimizer) error { return ErrNoLibtorch }
func (g *Group) AllReduce([]float64) error           { return ErrNoLibtorch }
func (g *Group) Broadcast([]byte) ([]byte, error)    { return nil, ErrNoLibtorch }
