package trainer

import (
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// trainOn runs the training step s on the batch in through an engine on
// the CPU, as lcl train's loop does.
func trainOn(t *testing.T, s *torch.Step, in torch.Input) {
	t.Helper()
	e := cpuEngine(t)
	if err := e.Put(in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Train(s, 0); err != nil {
		t.Fatal(err)
	}
}

// evalOn evaluates m on the batch in through an engine on the CPU, as
// lcl train and lcl eval do; logits says whether to return them.
func evalOn(t *testing.T, m *torch.Model, in torch.Input, logits bool) torch.EvalResult {
	t.Helper()
	e := cpuEngine(t)
	if err := e.Put(in); err != nil {
		t.Fatal(err)
	}
	ev, err := e.Eval(m, logits, false)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// cpuEngine is an engine for float32 batches on the CPU, closed with the
// test.
func cpuEngine(t *testing.T) *torch.Engine {
	t.Helper()
	e, err := torch.NewEngine("cpu", torch.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}
