//go:build !cgo

package torch

type Engine struct{}

func NewEngine(device string, o EngineOptions) (*Engine, error) { return nil, ErrNoLibtorch }
func (e *Engine) Close()                                        {}
func (e *Engine) Put(in Input) error                            { return ErrNoLibtorch }
func (e *Engine) Staged() int                                   { return 0 }
func (e *Engine) Train(s *Step, lossScale float64) (int, error) { return 0, ErrNoLibtorch }
func (e *Engine) Metrics(k int) (EngineMetrics, error)          { return EngineMetrics{}, ErrNoLibtorch }
func (e *Engine) Eval(m *Model, logits, features bool) (EvalResult, error) {
	return EvalResult{}, ErrNoLibtorch
}
func (m *Model) ChannelsLast() error                               { return ErrNoLibtorch }
func SetCUDAFlags(cudnnBenchmark, tf32 bool) error                 { return ErrNoLibtorch }
func Synchronize(device string) error                              { return ErrNoLibtorch }
func DeviceMemory(device string, reset bool) (int64, int64, error) { return 0, 0, ErrNoLibtorch }
func HasDist() bool                                                { return false }
func DistBackends() []string                                       { return nil }
