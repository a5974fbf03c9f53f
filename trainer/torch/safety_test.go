//go:build cgo

package torch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// singleGroup joins a process group of one rank on loopback.
func singleGroup(t *testing.T) *Group {
	t.Helper()
	g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: freePort(t), Rank: 0, Size: 1, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestUseAfterClose: every method of a closed (or nil) Tensor, Model,
// Optimizer, Group, Engine and State (of a closed owner), and every call
// given one, returns an error wrapping ErrClosed instead of handing a freed
// or nil handle to C, and the same calls on live values succeed (so the
// errors come from the closed value, not from a bad call).
func TestUseAfterClose(t *testing.T) {
	spec := mlpSpec(1, 2, 2, 3)
	newModel := func() (*Model, *Optimizer) {
		m, err := NewModel(spec, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		o, err := NewSGD(m, 0.9, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return m, o
	}
	newTargets := func() *Tensor {
		tt, err := NewTensor([]float32{1, 0, 0, 0, 1, 0, 0, 0, 1}, []int64{3, 3}, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	// The live values.
	lm, lo := newModel()
	defer lm.Close()
	defer lo.Close()
	lt := newTargets()
	defer lt.Close()
	lg := singleGroup(t)
	defer lg.Close()
	mState, err := lm.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	oState, err := lo.State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	byName := func(ns []Named) map[string]Named {
		out := map[string]Named{}
		for _, n := range ns {
			out[n.Name] = n
		}
		return out
	}
	// The closed ones, each closed twice (Close is idempotent).
	cm, co := newModel()
	ct := newTargets()
	cg := singleGroup(t)
	ce := newEngine(t)
	for range 2 {
		co.Close()
		cm.Close()
		ct.Close()
		cg.Close()
		ce.Close()
	}
	cg.Abort("after Close: does nothing")

	in := Input{X: []float32{1, 2, 3, 4, 4, 3, 2, 1}, N: 2, C: 1, H: 2, W: 2, Y: []int64{0, 2}}
	// A step and an evaluation each on an engine of its own: a step refused
	// before it starts leaves its batch staged.
	step := func(m, teacher *Model, o *Optimizer, tt *Tensor, g *Group) func() error {
		return func() error {
			co := Coefs{SoftCE: 1}
			if teacher != nil {
				co.KD, co.KDTemperature = 1, 2
			}
			_, err := trainStep(newEngine(t), &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Teacher: teacher,
				Targets: tt, Coefs: co, LR: 0.01, Group: g}, in)
			return err
		}
	}
	eval := func(m *Model) func() error {
		return func() error { _, err := evalBatch(newEngine(t), m, in, true, true); return err }
	}
	evalWith := func(m *Model, cost *Tensor) func() error {
		return func() error {
			e := newEngine(t)
			if err := e.Put(in); err != nil {
				return err
			}
			_, err := e.EvalWith(m, EvalRequest{TopK: 1, Cost: cost})
			return err
		}
	}
	type call struct {
		method string // Type.Method, as the completeness check below names it
		what   string
		closed func() error
		live   func() error
	}
	calls := []call{
		{"Model.NumParams", "", func() error { _, err := cm.NumParams(); return err },
			func() error { _, err := lm.NumParams(); return err }},
		{"Model.ChannelsLast", "", func() error { return cm.ChannelsLast() },
			func() error { m, _ := newModel(); defer m.Close(); return m.ChannelsLast() }},
		{"State.Copy", "of a model", func() error { _, err := cm.State().Copy(); return err },
			func() error { _, err := lm.State().Copy(); return err }},
		{"State.Copy", "of a nil model", func() error { _, err := (*Model)(nil).State().Copy(); return err }, nil},
		{"State.Load", "of a model", func() error { return cm.State().Load(byName(mState)) },
			func() error { return lm.State().Load(byName(mState)) }},
		{"State.Info", "of a model", func() error { _, err := cm.State().Info(); return err },
			func() error { _, err := lm.State().Info(); return err }},
		{"State.Read", "of a model", func() error { return cm.State().Read(0, mState[0].Data) },
			func() error { return lm.State().Read(0, mState[0].Data) }},
		{"State.Info", "of an optimizer", func() error { _, err := co.State().Info(); return err },
			func() error { _, err := lo.State().Info(); return err }},
		{"State.Read", "of an optimizer", func() error { return co.State().Read(0, oState[0].Data) },
			func() error { return lo.State().Read(0, oState[0].Data) }},
		{"State.Copy", "of an optimizer", func() error { _, err := co.State().Copy(); return err },
			func() error { _, err := lo.State().Copy(); return err }},
		{"State.Load", "of an optimizer", func() error { return co.State().Load(byName(oState)) },
			func() error { return lo.State().Load(byName(oState)) }},
		{"NewSGD", "of a closed model", func() error { _, err := NewSGD(cm, 0, 0, false); return err },
			func() error { o, err := NewSGD(lm, 0, 0, false); o.Close(); return err }},
		{"NewOptimizer", "of a closed model", func() error { _, err := NewOptimizer(cm, Rule{2, "adam"}, []float64{0.9, 0.999, 1e-8, 0}); return err },
			func() error {
				o, err := NewOptimizer(lm, Rule{2, "adam"}, []float64{0.9, 0.999, 1e-8, 0})
				o.Close()
				return err
			}},
		{"Optimizer.SetClipNorm", "", func() error { return co.SetClipNorm(1) }, func() error { return lo.SetClipNorm(0) }},
		{"Model.UpdateEMA", "", func() error { return cm.UpdateEMA(lm, 0.9) },
			func() error { m, o := newModel(); defer m.Close(); defer o.Close(); return m.UpdateEMA(lm, 0.9) }},
		{"Model.UpdateEMA", "of a closed model", func() error { return lm.UpdateEMA(cm, 0.9) }, nil},
		{"Model.FixHead", "", func() error { return cm.FixHead([]float32{1}, 1, 1) }, func() error {
			m, o := newModel()
			defer m.Close()
			defer o.Close()
			c, d := m.Spec().NumClasses, m.FeatureDim()
			return m.FixHead(make([]float32, c*d), c, d)
		}},
		{"Engine.Put", "", func() error { return ce.Put(in) }, func() error { return newEngine(t).Put(in) }},
		{"Engine.Metrics", "", func() error { _, err := ce.Metrics(1); return err },
			func() error { _, err := newEngine(t).Metrics(1); return err }},
		{"Engine.ClassProbs", "", func() error { _, _, err := ce.ClassProbs(3); return err },
			func() error { _, _, err := newEngine(t).ClassProbs(3); return err }},
		{"Engine.Train", "", func() error {
			_, err := ce.Train(&Step{Models: []*Model{lm}, Optims: []*Optimizer{lo}, Coefs: Coefs{HardCE: 1}}, 0)
			return err
		}, step(lm, nil, lo, nil, nil)},
		{"Engine.Train", "closed model", step(cm, nil, lo, nil, nil), nil},
		{"Engine.Train", "closed optimizer", step(lm, nil, co, nil, nil), nil},
		{"Engine.Train", "closed teacher", step(lm, cm, lo, nil, nil), step(lm, lm, lo, nil, nil)},
		{"Engine.Train", "closed targets (not one-hot)", step(lm, nil, lo, ct, nil), step(lm, nil, lo, lt, nil)},
		{"Engine.Train", "closed group", step(lm, nil, lo, nil, cg), step(lm, nil, lo, nil, lg)},
		{"Engine.Eval", "", func() error { _, err := ce.Eval(lm, true, true); return err }, eval(lm)},
		{"Engine.Eval", "closed model", eval(cm), nil},
		{"Engine.Eval", "nil model", eval(nil), nil},
		{"Engine.EvalWith", "", func() error { _, err := ce.EvalWith(lm, EvalRequest{TopK: 1}); return err }, evalWith(lm, nil)},
		{"Engine.EvalWith", "closed model", evalWith(cm, nil), nil},
		{"Engine.EvalWith", "closed cost matrix", evalWith(lm, ct), nil},
		{"Group.AllReduce", "", func() error { return cg.AllReduce([]float64{1}) },
			func() error { return lg.AllReduce([]float64{1}) }},
		{"Group.AllReduce", "empty", func() error { return cg.AllReduce(nil) }, func() error { return lg.AllReduce(nil) }},
		{"Group.Broadcast", "", func() error { _, err := cg.Broadcast([]byte("x")); return err },
			func() error { _, err := lg.Broadcast([]byte("x")); return err }},
		{"Group.BroadcastModel", "", func() error { return cg.BroadcastModel(lm, false) },
			func() error { return lg.BroadcastModel(lm, false) }},
		{"Group.BroadcastModel", "of a closed model", func() error { return lg.BroadcastModel(cm, true) }, nil},
		{"Group.BroadcastOptimizer", "", func() error { return cg.BroadcastOptimizer(lo) },
			func() error { return lg.BroadcastOptimizer(lo) }},
		{"Group.BroadcastOptimizer", "of a closed optimizer", func() error { return lg.BroadcastOptimizer(co) }, nil},
	}
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.method] = true
		t.Run(strings.TrimSpace(c.method+" "+c.what), func(t *testing.T) {
			if err := c.closed(); !errors.Is(err, ErrClosed) {
				t.Errorf("on a closed value: %v, want an error wrapping ErrClosed", err)
			}
			if c.live != nil {
				if err := c.live(); err != nil {
					t.Errorf("on a live value: %v", err)
				}
			}
		})
	}
	// Every method that reaches C is in the table: a new one needs a case.
	// (Close, Abort and the Go-only accessors are exempt.)
	exempt := map[string]bool{"Close": true, "Abort": true, "Shape": true, "Spec": true, "FeatureDim": true,
		"Rank": true, "Size": true, "State": true}
	for _, v := range []any{&Tensor{}, &Model{}, &Optimizer{}, &Group{}, &State{}, &Engine{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			name := typ.Elem().Name() + "." + typ.Method(i).Name
			if !exempt[typ.Method(i).Name] && !covered[name] {
				t.Errorf("%s is not checked after Close: add a case", name)
			}
		}
	}
}

// TestGroupAbortRacesClose hammers Abort (as context.AfterFunc runs it on
// cancellation) against Close and against a collective that Close ends:
// under -race this fails on an unsynchronised handle, and without the
// locking Abort would call into freed C memory.
func TestGroupAbortRacesClose(t *testing.T) {
	for range 20 {
		g := singleGroup(t)
		ctx, cancel := context.WithCancel(context.Background())
		stop := context.AfterFunc(ctx, func() { g.Abort("canceled") })
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				for range 50 {
					g.Abort("hammer")
				}
			})
		}
		wg.Go(func() { <-start; cancel() })
		close(start)
		g.Close()
		wg.Wait()
		stop()
		if err := g.AllReduce([]float64{1}); !errors.Is(err, ErrClosed) {
			t.Fatalf("all-reduce after Close: %v", err)
		}
	}
	// Close while a collective waits for a peer that never joins: the
	// collective fails at once (not at the 30 s timeout) and Close returns
	// after it, with Aborts racing both.
	errs := ranks(t, 2, func(g *Group) error {
		if g.Rank() == 1 {
			time.Sleep(500 * time.Millisecond)
			return nil
		}
		done := make(chan error, 1)
		go func() { done <- g.AllReduce([]float64{1}) }()
		time.Sleep(100 * time.Millisecond)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for range 100 {
					g.Abort("hammer")
				}
			})
		}
		g.Close()
		wg.Wait()
		select {
		case err := <-done:
			if err == nil {
				return errors.New("all-reduce without its peer succeeded")
			}
		case <-time.After(10 * time.Second):
			return errors.New("Close returned before the collective it aborted")
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestShimOfAnotherABIVersion builds testdata/abicheck with -tags ltshim
// against a fake libltshim.so that reports another ABI version (and aborts
// the process if anything else is called): the program starts (no panic
// during initialisation), Version still answers, and Check and every
// constructor return an error wrapping ErrABIMismatch.
func TestShimOfAnotherABIVersion(t *testing.T) {
	header, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	checks, err := os.ReadFile("scriptcheck.h") // the TorchScript checks' part of the ABI
	if err != nil {
		t.Fatal(err)
	}
	header = append(header, checks...)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(lt_[a-z0-9_]+)\s*\(`).FindAllSubmatch(header, -1) {
		names[string(m[1])] = true
	}
	if !names["lt_abi_version"] || !names["lt_model_new"] {
		t.Fatalf("no functions found in shim.h: %v", names)
	}
	var src strings.Builder
	src.WriteString("#include <stdlib.h>\nint lt_abi_version(void) { return 9999; }\nconst char *lt_torch_version(void) { return \"fake-1.0\"; }\n")
	for n := range names {
		if n != "lt_abi_version" && n != "lt_torch_version" {
			src.WriteString("void " + n + "(void) { abort(); }\n")
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := "cc"
	if out, err := exec.Command("go", "env", "CC").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		cc = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libltshim.so"), filepath.Join(dir, "fake.c")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	bin := filepath.Join(dir, "abicheck")
	build := exec.Command("go", "build", "-tags", "ltshim", "-o", bin, "./testdata/abicheck")
	build.Env = append(os.Environ(), "CGO_LDFLAGS=-L"+dir+" -Wl,-rpath,"+dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags ltshim: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("abicheck: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"version fake-1.0\n",
		"available false\n",
		fmt.Sprintf("Check: mismatch true: torch: shim ABI version mismatch: the shim library (libltshim.so) speaks ABI version 9999, this lcl binary version %d:", abiVersion),
		"NewModel: mismatch true\n", "NewTensor: mismatch true\n", "NewGroup: mismatch true\n",
		"SetThreads: mismatch true\n", "ManualSeed: mismatch true\n", "NewEngine: mismatch true\n",
		"Threads: mismatch true\n", "CUDADevices: mismatch true\n", "SetCUDAFlags: mismatch true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// TestCABIConvention holds every function of shim.h to the ABI's rules: it
// reports failure through a char **err out-parameter of the same call, or is
// one of the few that cannot fail (declared LT_NOEXCEPT); and every
// definition in the C++ files catches exceptions (LT_TRY or try) or is
// noexcept, so no C++ exception crosses into Go.
func TestCABIConvention(t *testing.T) {
	comments := regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	src, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	decls := regexp.MustCompile(`(?s)\b(lt_\w+)\s*\(([^;{]*?)\)\s*(LT_NOEXCEPT)?\s*;`)
	header := comments.ReplaceAllString(string(src), "")
	declared := 0
	errLast := regexp.MustCompile(`char\s*\*\s*\*\s*err\s*$`)
	for _, m := range decls.FindAllStringSubmatch(header, -1) {
		declared++
		if m[3] == "" && !errLast.MatchString(m[2]) {
			t.Errorf("shim.h: %s neither ends in char **err nor is LT_NOEXCEPT", m[1])
		}
	}
	if declared < 20 {
		t.Fatalf("found only %d declarations in shim.h", declared)
	}
	cpp, err := filepath.Glob("*.cpp")
	if err != nil || len(cpp) == 0 {
		t.Fatalf("no C++ files: %v", err)
	}
	// engine.hpp holds the engine's part of the C ABI (shim.cpp includes it).
	cpp = append(cpp, "engine.hpp")
	def := regexp.MustCompile(`(?m)^[A-Za-z_][\w \t*]*?\b(lt_\w+)\s*\([^)]*\)\s*(noexcept)?\s*\{`)
	tryBlock := regexp.MustCompile(`\btry\s*\{`)
	defined := 0
	for _, f := range cpp {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := comments.ReplaceAllString(string(b), "")
		for _, loc := range def.FindAllStringSubmatchIndex(s, -1) {
			defined++
			name := s[loc[2]:loc[3]]
			depth, i := 1, loc[1]
			for ; depth > 0 && i < len(s); i++ {
				switch s[i] {
				case '{':
					depth++
				case '}':
					depth--
				}
			}
			body := s[loc[1]:i]
			if loc[4] < 0 && !strings.Contains(body, "LT_TRY") && !tryBlock.MatchString(body) {
				t.Errorf("%s: %s does not catch C++ exceptions (LT_TRY ... LT_CATCH) and is not noexcept", f, name)
			}
		}
	}
	if defined < declared {
		t.Errorf("%d definitions found for %d declarations", defined, declared)
	}
}
