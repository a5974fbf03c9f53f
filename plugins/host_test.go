package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcl-project/lcl/plugins/internal/shim"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// The test binary doubles as the plugins under test: started by go-plugin
// (the handshake cookie is set), it serves the plugin named by its last two
// arguments instead of running tests.
func init() {
	if os.Getenv(shim.Handshake.MagicCookieKey) != shim.Handshake.MagicCookieValue {
		return
	}
	kind, name := os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]
	if st, ok := testStrategies[name]; ok && kind == KindStrategy {
		sdk.Serve(sdk.ServeConfig{Strategy: st})
		os.Exit(0)
	}
	if err := ServeBuiltin(kind, name); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

var testStrategies = map[string]sdk.Strategy{
	"hang":     &broken{how: "hang"},
	"crash":    &broken{how: "crash"},
	"rowsum":   &broken{how: "rowsum"},
	"negative": &broken{how: "negative"},
	"shape":    &broken{how: "shape"},
	"refuse":   &broken{how: "refuse"},
	"env":      &broken{how: "env"},
	"badstage": &broken{how: "badstage"},
}

// broken behaves like sl at epoch 0 and misbehaves from epoch 1 on.
type broken struct {
	strategy.SL
	how     string
	classes int
}

func (b *broken) Begin(ctx context.Context, run sdk.Run) ([]sdk.Stage, error) {
	b.classes = len(run.Classes)
	stages, err := b.SL.Begin(ctx, run)
	if b.how == "badstage" {
		stages[0].Name = "../../x"
	}
	return stages, err
}

// Describe of "env" reports the plugin's environment in its summary.
func (b *broken) Describe(ctx context.Context) (sdk.StrategyInfo, error) {
	info, err := b.SL.Describe(ctx)
	if b.how == "env" {
		info.Summary = strings.Join(os.Environ(), "\x00")
	}
	return info, err
}

func (b *broken) Plan(ctx context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	p, err := b.SL.Plan(ctx, at)
	if err != nil || at.Epoch == 0 {
		return p, err
	}
	c := b.classes
	switch b.how {
	case "hang":
		time.Sleep(time.Hour)
	case "crash":
		panic("boom at epoch 1")
	case "rowsum":
		p.Targets = strategy.Smoothed(c, 0.1).Dense()
		p.Targets.Set(1, 1, 2)
	case "negative":
		p.Targets = strategy.OneHot(c).Dense()
		p.Targets.Set(0, 0, 1.5)
		p.Targets.Set(0, 1, -0.5)
	case "shape":
		p.Targets = sdk.NewMatrix(c, c+1)
	case "refuse":
		return nil, errors.New("cannot plan epoch 1:\nno similarity")
	}
	return p, nil
}

// testHost returns a host that serves built-ins and test strategies from
// this test binary, and a plugin folder with wrapper scripts for the test
// strategies.
func testHost(t testing.TB) *Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name := range testStrategies {
		script := fmt.Sprintf("#!/bin/sh\nexec %q strategy %s\n", exe, name)
		if err := os.WriteFile(filepath.Join(dir, "lcl-strategy-"+name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := &Host{Dirs: []string{dir}, Self: []string{exe}, Timeout: 3 * time.Second}
	t.Cleanup(h.Close)
	return h
}

func testRun(c, n int) sdk.Run {
	run := sdk.Run{Epochs: 3, NumExamples: n}
	for i := 0; i < c; i++ {
		run.Classes = append(run.Classes, sdk.Class{Index: i, ID: fmt.Sprint("c", i)})
	}
	for i := 0; i < n; i++ {
		run.Labels = append(run.Labels, i%c)
	}
	return run
}

func TestBuiltinLCLOverTheProtocol(t *testing.T) {
	h := testHost(t)
	ctx := context.Background()
	st, err := h.Strategy("lcl")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Describe(ctx)
	if err != nil || info.Name != "lcl" || !info.NeedsSimilarity {
		t.Fatalf("Describe = %+v, %v", info, err)
	}
	run := testRun(3, 6)
	run.Similarity = &sdk.Matrix{Rows: 3, Cols: 3, Data: []float32{1, 0.5, 0.5, 0.2, 1, 0.6, 0, 0.25, 1}}
	run.Params = map[string]string{"epsilon": "0.5"}
	stages, err := st.Begin(ctx, run)
	if err != nil || len(stages) != 1 || stages[0].Epochs != 3 {
		t.Fatalf("Begin = %+v, %v", stages, err)
	}
	p, err := st.Plan(ctx, sdk.PlanAt{Epoch: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The worked example's epoch 2, row 1: [1/48, 11/12, 1/16].
	if got := p.Targets.Row(1); abs(float64(got[0])-1./48) > 1e-7 || abs(float64(got[1])-11./12) > 1e-7 || abs(float64(got[2])-1./16) > 1e-7 {
		t.Fatalf("row 1 at epoch 2 = %v", got)
	}
	if _, err := st.Begin(ctx, sdk.Run{Classes: run.Classes, NumExamples: 0, Epochs: 3, Params: map[string]string{"epsilon": "1.5"}, Similarity: run.Similarity}); err == nil ||
		!strings.Contains(err.Error(), `strategy plugin "lcl" (built-in): Begin: epsilon = 1.5`) {
		t.Fatalf("bad epsilon: err = %v", err)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// mbm-soft served by lcl, as lcl train runs it: the plan that crosses the
// protocol is the one the strategy computes in-process, bit for bit, and
// the same every epoch.
func TestBuiltinMBMSoftOverTheProtocol(t *testing.T) {
	h := testHost(t)
	ctx := context.Background()
	st, err := h.Strategy("mbm-soft")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Describe(ctx)
	if err != nil || info.Name != "mbm-soft" || !info.NeedsSimilarity || len(info.Params) != 1 || info.Params[0].Name != "beta" || info.Params[0].Default != "10" {
		t.Fatalf("Describe = %+v, %v", info, err)
	}
	run := testRun(3, 6)
	run.Similarity = &sdk.Matrix{Rows: 3, Cols: 3, Data: []float32{1, 0.5, 0, 0.5, 1, 0.25, 0, 0.25, 1}}
	run.Params = map[string]string{"beta": "4"}
	if _, err := st.Begin(ctx, run); err != nil {
		t.Fatal(err)
	}
	want, err := strategy.MBMSoftTargets(run.Similarity, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	want = want.Dense()
	for e := range 3 {
		p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Targets.Data, want.Data) || p.Coefs != (sdk.Coefs{SoftCE: 1}) {
			t.Fatalf("epoch %d: plan %v %+v, want targets %v", e, p.Targets.Data, p.Coefs, want.Data)
		}
	}
	run.Params = map[string]string{"beta": "0"}
	if _, err := st.Begin(ctx, run); err == nil || !strings.Contains(err.Error(), `strategy plugin "mbm-soft" (built-in): Begin: beta = 0, want a finite value > 0`) {
		t.Fatalf("beta = 0: err = %v", err)
	}
}

func TestMisbehavingPlugins(t *testing.T) {
	h := testHost(t)
	tests := []struct {
		name string
		want string
		is   error
	}{
		{"hang", "no answer within 3s", context.DeadlineExceeded},
		{"crash", "the plugin process died; stderr: panic: boom at epoch 1", ErrCrashed},
		{"rowsum", "invalid plan: target row 1 sums to 2.075, want 1", ErrInvalid},
		{"negative", "invalid plan: target[0][1] = -0.5, want a finite value ≥ 0", ErrInvalid},
		{"shape", "invalid plan: target matrix is 4×5 with 20 values, want 4×4", ErrInvalid},
		{"refuse", "cannot plan epoch 1: ⏎ no similarity", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := h.Strategy(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Begin(ctx, testRun(4, 8)); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Plan(ctx, sdk.PlanAt{Epoch: 0}); err != nil {
				t.Fatalf("epoch 0: %v", err)
			}
			_, err = st.Plan(ctx, sdk.PlanAt{Epoch: 1})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			prefix := fmt.Sprintf("strategy plugin %q (%s): Plan(stage 0, epoch 1): ", tt.name, filepath.Join(h.Dirs[0], "lcl-strategy-"+tt.name))
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q\nwant one line starting %q containing %q", msg, prefix, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestKillPluginMidCall(t *testing.T) {
	h := testHost(t)
	h.Timeout = time.Minute
	ctx := context.Background()
	st, err := h.Strategy("hang")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Begin(ctx, testRun(2, 2)); err != nil {
		t.Fatal(err)
	}
	pid := st.c.pid
	if pid == 0 {
		t.Fatal("no pid")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	_, err = st.Plan(ctx, sdk.PlanAt{Epoch: 1})
	want := `strategy plugin "hang" (` + filepath.Join(h.Dirs[0], "lcl-strategy-hang") + `): Plan(stage 0, epoch 1): the plugin process died`
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") || !errors.Is(err, ErrCrashed) {
		t.Fatalf("err = %v\nwant one line starting %q", err, want)
	}
}

// A stopped plugin leaves nothing in the temporary folder: its Unix socket
// lived in a folder of its own, removed with it (the plugin is killed, so
// go-plugin's server never removes the socket itself).
func TestStoppedPluginLeavesNoSocket(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the host's and (through hostEnv) the plugin's
	h := testHost(t)
	for _, name := range []string{"sl", "hang"} {
		st, err := h.Strategy(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Describe(context.Background()); err != nil {
			t.Fatal(err)
		}
		socks, _ := filepath.Glob(filepath.Join(tmp, "lcl-plugin-*", "plugin*"))
		if len(socks) != 1 {
			t.Fatalf("%s running: sockets %v, want one in its own folder under %s", name, socks, tmp)
		}
		st.Close()
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("left in the temporary folder after the plugins stopped: %v", left)
	}
}

// Under a $TMPDIR too long for a socket in a folder of its own (but not for
// one directly in it) plugins still start.
func TestLongTempDirStillStarts(t *testing.T) {
	tmp := t.TempDir()
	long := filepath.Join(tmp, strings.Repeat("d", 80-len(tmp)-1))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	if n := len(long); n+len("/lcl-plugin-")+10+len("/plugin")+10 < sunPathLen || n+len("/plugin")+10 >= sunPathLen {
		t.Fatalf("a $TMPDIR of %d bytes does not test the fallback", n)
	}
	t.Setenv("TMPDIR", long)
	st, err := testHost(t).Strategy("sl")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
}
func TestCancelIsNotBlamedOnPlugin(t *testing.T) {
	h := testHost(t)
	st, err := h.Strategy("hang")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Begin(context.Background(), testRun(2, 2)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := st.Plan(ctx, sdk.PlanAt{Epoch: 1}); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "plugin") {
		t.Fatalf("err = %v, want the caller's context error", err)
	}
}

func TestUnknownPlugin(t *testing.T) {
	h := testHost(t)
	_, err := h.Strategy("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown strategy plugin "nope"`) || !strings.Contains(err.Error(), "lcl, ls") {
		t.Fatalf("err = %v", err)
	}
}

func TestNotAPlugin(t *testing.T) {
	h := testHost(t)
	script := "#!/bin/sh\necho hello\n"
	if err := os.WriteFile(filepath.Join(h.Dirs[0], "lcl-strategy-liar"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := h.Strategy("liar")
	if err == nil || !strings.Contains(err.Error(), `strategy plugin "liar"`) || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("err = %v", err)
	}
}

func TestProtocolVersionMismatch(t *testing.T) {
	h := testHost(t)
	// A plugin announcing protocol 99 in its handshake line.
	script := "#!/bin/sh\necho '1|99|tcp|127.0.0.1:1|grpc'\nsleep 5\n"
	if err := os.WriteFile(filepath.Join(h.Dirs[0], "lcl-strategy-future"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := h.Strategy("future")
	if err == nil || !strings.Contains(err.Error(), `strategy plugin "future"`) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("err = %v", err)
	}
}

func TestList(t *testing.T) {
	h := testHost(t)
	h.Dirs = append(h.Dirs, t.TempDir()) // an empty second folder
	list, err := h.List(context.Background(), ListOptions{Describe: true})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Descriptor{}
	for _, d := range list {
		byName[d.Kind+"/"+d.Name] = d
	}
	for _, n := range strategy.Names() {
		d := byName["strategy/"+n]
		if d.Path != "built-in" || d.Version != strategy.Version || d.Error != "" {
			t.Errorf("%s: %+v", n, d)
		}
	}
	if d := byName["strategy/lcl"]; len(d.Params) == 0 || d.Params[0].Name != "epsilon" || d.Params[0].Default != "0.99" {
		t.Errorf("lcl params: %+v", d.Params)
	}
	if d := byName["strategy/hang"]; !strings.HasSuffix(d.Path, "lcl-strategy-hang") || d.Error != "" {
		t.Errorf("hang: %+v", d)
	}
	if d := byName["similarity/matrix"]; d.Path != "built-in" || d.Error != "" {
		t.Errorf("matrix: %+v", d)
	}
}

func TestDiscover(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(dir, name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "lcl-strategy-x", 0o755)
	write(b, "lcl-strategy-x", 0o755) // shadowed by a's
	write(b, "lcl-similarity-y.py", 0o755)
	write(a, "lcl-strategy-noexec", 0o644)
	write(a, "other-tool", 0o755)
	got := Discover([]string{a, "/does/not/exist", b})
	want := []Found{{KindStrategy, "x", filepath.Join(a, "lcl-strategy-x"), ""}, {KindSimilarity, "y", filepath.Join(b, "lcl-similarity-y.py"), ""}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Discover = %v, want %v", got, want)
	}
	t.Setenv("LCL_PLUGIN_PATH", a+string(os.PathListSeparator)+b)
	t.Setenv("HOME", "/home/someone")
	if got, want := SearchPath(), []string{a, b, "/home/someone/.lcl/plugins"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("SearchPath = %v, want %v", got, want)
	}
}

// Matrices beyond the inline limit travel as files of the plugin's matrix
// folder both ways: the similarity to Begin, the targets from Plan. The
// plans equal those sent inline, the host removes each file it reads, and
// the folder goes with the plugin.
func TestLargeMatricesTravelAsFiles(t *testing.T) {
	ctx := context.Background()
	const c = 40 // 6400 bytes: above the 1 KiB limit below
	run := testRun(c, 2*c)
	run.Similarity = sdk.NewMatrix(c, c)
	for i := range run.Similarity.Data {
		run.Similarity.Data[i] = float32(i%7) / 7
	}
	for i := 0; i < c; i++ {
		run.Similarity.Set(i, i, 1)
	}
	run.Params = map[string]string{"epsilon": "0.9"}
	plans := map[int64][]*sdk.Plan{}
	for _, limit := range []int64{0, 1 << 10} {
		h := testHost(t)
		h.MatrixDir, h.InlineLimit = t.TempDir(), limit
		st, err := h.Strategy("lcl")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Begin(ctx, run); err != nil {
			t.Fatal(err)
		}
		folders, _ := filepath.Glob(filepath.Join(h.MatrixDir, "lcl-plugin-*"))
		if len(folders) != 1 {
			t.Fatalf("matrix folders %v, want one", folders)
		}
		for e := 0; e < 3; e++ {
			p, err := st.Plan(ctx, sdk.PlanAt{Epoch: e})
			if err != nil {
				t.Fatal(err)
			}
			// Shared targets are read into the last plan's memory: keep a copy.
			p.Targets = p.Targets.Clone()
			plans[limit] = append(plans[limit], p)
			if left, _ := os.ReadDir(folders[0]); len(left) != 0 {
				t.Fatalf("limit %d epoch %d: %d files left in the matrix folder", limit, e, len(left))
			}
		}
		st.Close()
		if _, err := os.Stat(folders[0]); !os.IsNotExist(err) {
			t.Errorf("matrix folder %s outlives its plugin: %v", folders[0], err)
		}
	}
	for e := range plans[0] {
		a, b := plans[0][e].Targets, plans[1<<10][e].Targets
		if a.Rows != c || b.Rows != c || len(a.Data) != c*c || len(b.Data) != c*c {
			t.Fatalf("epoch %d: shapes %d/%d", e, len(a.Data), len(b.Data))
		}
		for k := range a.Data {
			if a.Data[k] != b.Data[k] {
				t.Fatalf("epoch %d: value %d inline %v, shared %v", e, k, a.Data[k], b.Data[k])
			}
		}
	}
}

// A plugin that never sends its handshake while a child of it holds its
// stdout open (issue 23, item 6: lcl waited until the child ended) is
// stopped, with the child, once the start timeout has passed.
func TestStartTimeoutBoundsWholeStart(t *testing.T) {
	h := testHost(t)
	h.StartTimeout = time.Second
	script := "#!/bin/sh\nsleep 100 &\necho $! > \"$0.child\"\nwait\n"
	path := filepath.Join(h.Dirs[0], "lcl-strategy-mute")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := h.Strategy("mute")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Strategy returned after %v, want about the 1 s start timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), `strategy plugin "mute"`) || !strings.Contains(err.Error(), "no handshake within 1s") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
	raw, _ := os.ReadFile(path + ".child")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if pid <= 0 {
		t.Fatalf("the plugin's child pid: %q", raw)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the plugin's child still runs 5 s after the start failed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// $LCL_PLUGIN_START_TIMEOUT sets the start timeout.
func TestStartTimeoutFromEnvironment(t *testing.T) {
	t.Setenv("LCL_PLUGIN_START_TIMEOUT", "2m")
	if got := (&Host{}).startTimeout(); got != 2*time.Minute {
		t.Errorf("startTimeout = %v, want 2m", got)
	}
	t.Setenv("LCL_PLUGIN_START_TIMEOUT", "")
	if got := (&Host{}).startTimeout(); got != DefaultStartTimeout {
		t.Errorf("startTimeout = %v, want %v", got, DefaultStartTimeout)
	}
}
