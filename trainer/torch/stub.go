//go:build !cgo

package torch

// Without cgo the package still builds and vets; every operation reports
// ErrNoLibtorch. The types are declared once, in torch.go, engine_types.go
// and graph.go; only the handles differ.

type (
	tensorHandle = *struct{}
	modelHandle  = *struct{}
	optimHandle  = *struct{}
	groupHandle  = *struct{}
	stateHandle  = *struct{}
)

// Engine is the cgo build's (see there).
type Engine struct{}

func Check() error                             { return ErrNoLibtorch }
func Version() string                          { return "" }
func Available() bool                          { return false }
func SetThreads(n int) error                   { return ErrNoLibtorch }
func Threads() (int, error)                    { return 0, ErrNoLibtorch }
func ManualSeed(uint64) error                  { return ErrNoLibtorch }
func CUDADevices() (int, error)                { return 0, ErrNoLibtorch }
func CPUAllocStats() (AllocStats, bool, error) { return AllocStats{}, false, ErrNoLibtorch }
func initRuntime(Runtime) error                { return ErrNoLibtorch }
func startRuntime(Runtime) error               { return ErrNoLibtorch }
func SetCUDAFlags(cudnnBenchmark, tf32 bool) error {
	return ErrNoLibtorch
}
func Synchronize(device string) error                              { return ErrNoLibtorch }
func DeviceMemory(device string, reset bool) (int64, int64, error) { return 0, 0, ErrNoLibtorch }
func HasDist() bool                                                { return false }
func DistBackends() []string                                       { return nil }

func NewTensor(data []float32, shape []int64, device string) (*Tensor, error) {
	return nil, ErrNoLibtorch
}
func (t *Tensor) Close() {}

func NewModel(spec Spec, device string) (*Model, error)      { return nil, ErrNoLibtorch }
func (m *Model) Close()                                      {}
func (m *Model) NumParams() (int64, error)                   { return 0, ErrNoLibtorch }
func (m *Model) ChannelsLast() error                         { return ErrNoLibtorch }
func (m *Model) UpdateEMA(src *Model, decay float64) error   { return ErrNoLibtorch }
func (m *Model) FixHead(v []float32, classes, dim int) error { return ErrNoLibtorch }

func (m *Model) stateTable(string) (stateHandle, error)     { return nil, ErrNoLibtorch }
func (o *Optimizer) stateTable(string) (stateHandle, error) { return nil, ErrNoLibtorch }
func (s *State) Info() ([]Named, error)                     { return nil, ErrNoLibtorch }
func (s *State) Read(int, []byte) error                     { return ErrNoLibtorch }
func (s *State) Copy() ([]Named, error)                     { return nil, ErrNoLibtorch }
func (s *State) Load(map[string]Named) error                { return ErrNoLibtorch }

func NewSGD(m *Model, momentum, weightDecay float64, nesterov bool) (*Optimizer, error) {
	return nil, ErrNoLibtorch
}
func NewOptimizer(m *Model, r Rule, v []float64) (*Optimizer, error) { return nil, ErrNoLibtorch }
func (o *Optimizer) Close()                                          {}
func (o *Optimizer) SetClipNorm(maxNorm float64) error               { return ErrNoLibtorch }

func NewGroup(GroupConfig) (*Group, error)         { return nil, ErrNoLibtorch }
func (g *Group) Close()                            {}
func (g *Group) Abort(string)                      {}
func (g *Group) BroadcastModel(*Model, bool) error { return ErrNoLibtorch }
func (g *Group) BroadcastOptimizer(*Optimizer) error {
	return ErrNoLibtorch
}
func (g *Group) AllReduce([]float64) error        { return ErrNoLibtorch }
func (g *Group) Broadcast([]byte) ([]byte, error) { return nil, ErrNoLibtorch }

func NewEngine(device string, o EngineOptions) (*Engine, error) { return nil, ErrNoLibtorch }
func (e *Engine) Close()                                        {}
func (e *Engine) Put(in Input) error                            { return ErrNoLibtorch }
func (e *Engine) Train(s *Step, lossScale float64) (int, error) { return 0, ErrNoLibtorch }
func (e *Engine) Metrics(k int) (EngineMetrics, error)          { return EngineMetrics{}, ErrNoLibtorch }
func (e *Engine) ClassProbs(c int) ([]float64, []int64, error)  { return nil, nil, ErrNoLibtorch }
func (e *Engine) Eval(m *Model, logits, features bool) (EvalResult, error) {
	return EvalResult{}, ErrNoLibtorch
}
func (e *Engine) EvalWith(m *Model, q EvalRequest) (EvalResult, error) {
	return EvalResult{}, ErrNoLibtorch
}

// LoadedBLAS finds no BLAS without libtorch.
func LoadedBLAS() (BLAS, error) { return BLAS{}, ErrNoLibtorch }
