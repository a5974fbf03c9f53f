//go:build !cgo

package torch

// Without cgo the package still builds and vets; every operation reports
// ErrNoLibtorch. The types are declared once, in torch.go; only the handles
// differ.

type (
	tensorHandle = *struct{}
	modelHandle  = *struct{}
	optimHandle  = *struct{}
	groupHandle  = *struct{}
)

func Check() error                             { return ErrNoLibtorch }
func Version() string                          { return "" }
func Available() bool                          { return false }
func SetThreads(n int) error                   { return ErrNoLibtorch }
func Threads() (int, error)                    { return 0, ErrNoLibtorch }
func ManualSeed(uint64) error                  { return ErrNoLibtorch }
func CUDADevices() (int, error)                { return 0, ErrNoLibtorch }
func CPUAllocStats() (AllocStats, bool, error) { return AllocStats{}, false, ErrNoLibtorch }
func initRuntime(Runtime) error                { return ErrNoLibtorch }
func (t *Tensor) Close()                       {}
func (m *Model) Close()                        {}
func (o *Optimizer) Close()                    {}
func (g *Group) Close()                        {}
func (g *Group) Abort(string)                  {}
func (m *Model) NumParams() (int64, error)     { return 0, ErrNoLibtorch }

func NewTensor(data []float32, shape []int64, device string) (*Tensor, error) {
	return nil, ErrNoLibtorch
}
func NewModel(spec Spec, device string) (*Model, error) { return nil, ErrNoLibtorch }
func (m *Model) State() ([]Named, error)                { return nil, ErrNoLibtorch }
func (m *Model) LoadState(map[string]Named) error       { return ErrNoLibtorch }
func (m *Model) StateInfo() ([]Named, error)            { return nil, ErrNoLibtorch }
func (m *Model) ReadState(int, []byte) error            { return ErrNoLibtorch }
func (o *Optimizer) StateInfo() ([]Named, error)        { return nil, ErrNoLibtorch }
func (o *Optimizer) ReadState(int, []byte) error        { return ErrNoLibtorch }
func (m *Model) Eval(x []float32, n, c, h, w int, y []int64, logits, features bool) (EvalResult, error) {
	return EvalResult{}, ErrNoLibtorch
}
func NewRMSProp(m *Model, decay, eps, momentum, weightDecay float64) (*Optimizer, error) {
	return nil, ErrNoLibtorch
}
func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	return nil, ErrNoLibtorch
}
func (o *Optimizer) State() ([]Named, error)                              { return nil, ErrNoLibtorch }
func (o *Optimizer) LoadState(map[string]Named) error                     { return ErrNoLibtorch }
func TrainStep(s *Step) (StepResult, error)                               { return StepResult{}, ErrNoLibtorch }
func Loss(LossInput) (float32, []float32, error)                          { return 0, nil, ErrNoLibtorch }
func CrossEntropy(logits []float32, n, c int, y []int64) (float32, error) { return 0, ErrNoLibtorch }
func NewGroup(GroupConfig) (*Group, error)                                { return nil, ErrNoLibtorch }
func (g *Group) BroadcastModel(*Model, bool) error                        { return ErrNoLibtorch }
func (g *Group) BroadcastOptimizer(*Optimizer) error                      { return ErrNoLibtorch }
func (g *Group) AllReduce([]float64) error                                { return ErrNoLibtorch }
func (g *Group) Broadcast([]byte) ([]byte, error)                         { return nil, ErrNoLibtorch }
