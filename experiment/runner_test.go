package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcl-project/lcl/simstore"
)

// fakeTrain plays `lcl train`: it writes a checkpoint-like file, one metrics
// line per epoch and the result, whose top-1 encodes the seed so the test can
// check that results land on the right run.
type fakeTrain struct {
	mu     sync.Mutex // runs side by side (Runner.Jobs) call launch at once
	calls  [][]string
	failOn func(args []string) error // nil: succeed
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func (f *fakeTrain) launch(ctx context.Context, args []string, log io.Writer) error {
	f.mu.Lock()
	f.calls = append(f.calls, args)
	f.mu.Unlock()
	fmt.Fprintln(log, "fake train", strings.Join(args, " "))
	dir := flagValue(args, "--out")
	if err := os.WriteFile(filepath.Join(dir, "checkpoint.pt"), []byte("ckpt"), 0o644); err != nil {
		return err
	}
	if f.failOn != nil {
		if err := f.failOn(args); err != nil {
			return err
		}
	}
	seed := flagValue(args, "--seed")
	if seed == "" {
		seed = "1" // lcl train's default: TrainArgs leaves defaults out
	}
	var lines []string
	for e := 1; e <= 2; e++ {
		lines = append(lines, fmt.Sprintf(`{"epoch":%d,"loss":1.5,"top1":[0.%d%s],"top5":[0.9]}`, e, 50+e, seed))
	}
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ResultFile), []byte(`{"top1":[0.8`+seed+`5],"top5":[0.99]}`), 0o644)
}

func memStore(t *testing.T) *simstore.Store {
	t.Helper()
	s, err := simstore.Open(t.TempDir(), simstore.InMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func smallRuns(t *testing.T) []Run {
	t.Helper()
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return g.Expand()
}

func TestRunnerStoresResults(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)
	fake := &fakeTrain{}
	var progress []int
	r := &Runner{Launch: fake.launch, Results: store, Root: t.TempDir(),
		Progress: func(done, total int, _ time.Duration) { progress = append(progress, done) }}
	s, err := r.Run(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Done != len(runs) || s.Skipped != 0 || len(fake.calls) != len(runs) {
		t.Fatalf("summary %+v after %d calls", s, len(fake.calls))
	}
	if len(progress) != len(runs) || progress[len(progress)-1] != len(runs) {
		t.Errorf("progress %v", progress)
	}
	for _, run := range runs {
		rec, err := store.GetRun(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := strconv.ParseFloat(fmt.Sprintf("0.8%d5", run.Config.Seed), 64) // fractions, as lcl train writes
		if rec.Status != simstore.RunDone || len(rec.Top1) != 1 || rec.Top1[0] != want {
			t.Errorf("%s: status %s top1 %v, want done [%v]", run.ID, rec.Status, rec.Top1, want)
		}
		var epochs []map[string]any
		if err := json.Unmarshal(rec.Epochs, &epochs); err != nil || len(epochs) != 2 {
			t.Errorf("%s: epochs %s (%v)", run.ID, rec.Epochs, err)
		}
		if cfg := rec.Config; cfg.ID() != run.ID {
			t.Errorf("%s: stored config %+v does not digest to the id", run.ID, rec.Config)
		}
	}
	// A second pass launches nothing.
	fake.calls = nil
	s, err = r.Run(context.Background(), runs)
	if err != nil || s.Skipped != len(runs) || len(fake.calls) != 0 {
		t.Fatalf("rerun: %+v, %d calls, %v", s, len(fake.calls), err)
	}
}

// A grid killed midway and re-run finishes only the missing runs, resuming
// the interrupted one.
func TestRunnerResumesKilledGrid(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	const killAt = 5 // the 5th launch is interrupted
	fake := &fakeTrain{}
	fake.failOn = func(args []string) error {
		if len(fake.calls) == killAt {
			cancel()
			return errors.New("signal: interrupt")
		}
		return nil
	}
	r := &Runner{Launch: fake.launch, Results: store, Root: root}
	_, err := r.Run(ctx, runs)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first pass: %v, want context.Canceled", err)
	}
	interrupted := runs[killAt-1]
	rec, err := store.GetRun(context.Background(), interrupted.ID)
	if err != nil || rec.Status != simstore.RunRunning {
		t.Fatalf("interrupted run: %+v %v", rec, err)
	}

	second := &fakeTrain{}
	r.Launch = second.launch
	s, err := r.Run(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Skipped != killAt-1 || s.Done != len(runs)-killAt+1 {
		t.Errorf("second pass %+v, want %d skipped", s, killAt-1)
	}
	if len(second.calls) != len(runs)-killAt+1 {
		t.Fatalf("second pass launched %d runs, want %d", len(second.calls), len(runs)-killAt+1)
	}
	first := second.calls[0]
	if flagValue(first, "--out") != RunDir(root, interrupted.ID) || !slices.Contains(first, "--resume") {
		t.Errorf("interrupted run relaunched as %q, want --resume in %s", first, RunDir(root, interrupted.ID))
	}
	for _, c := range second.calls[1:] {
		if slices.Contains(c, "--resume") {
			t.Errorf("fresh run launched with --resume: %q", c)
		}
	}
}

func TestRunnerRecordsFailuresAndGoesOn(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)[:4]
	fake := &fakeTrain{failOn: func(args []string) error {
		if flagValue(args, "--seed") == "2" {
			return errors.New("exit status 1")
		}
		return nil
	}}
	var mu sync.Mutex
	var logged []string
	r := &Runner{Launch: fake.launch, Results: store, Root: t.TempDir(), Logf: func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, a...))
	}}
	s, err := r.Run(context.Background(), runs)
	if err == nil || s.Failed != 2 || s.Done != 2 || !strings.Contains(err.Error(), "2 of 4 runs failed") {
		t.Fatalf("summary %+v, err %v", s, err)
	}
	if !strings.Contains(err.Error(), "fake train") {
		t.Errorf("error does not quote the run's log: %v", err)
	}
	// The first line says what failed: the first run, its error.
	var fe *FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("%T, want a *FailedError", err)
	}
	first := fe.Lines()[0]
	if !strings.HasPrefix(first, "2 of 4 runs failed; the first, ") || !strings.Contains(first, "seed=2): exit status 1") {
		t.Errorf("first line %q: want the count, the first failed run and its error", first)
	}
	// Every log line is one line: the failure's log tail comes as lines
	// of their own, not one line with newlines in it.
	failed := 0
	for _, l := range logged {
		if strings.Contains(l, "\n") {
			t.Errorf("log line with a newline: %q", l)
		}
		if strings.HasPrefix(l, "FAILED ") {
			failed++
		}
	}
	if failed != 2 || !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "fake train") }) {
		t.Errorf("log: %d FAILED lines and no line of the run's log:\n%s", failed, strings.Join(logged, "\n"))
	}
	for _, run := range runs {
		rec, _ := store.GetRun(context.Background(), run.ID)
		want := simstore.RunDone
		if run.Config.Seed == 2 {
			want = simstore.RunFailed
		}
		if rec == nil || rec.Status != want {
			t.Errorf("%s seed %d: %+v, want %s", run.ID, run.Config.Seed, rec, want)
		}
	}
}

func TestRunnerMissingResult(t *testing.T) {
	store := memStore(t)
	run := smallRuns(t)[0]
	silent := func(ctx context.Context, args []string, log io.Writer) error { return nil }
	r := &Runner{Launch: silent, Results: store, Root: t.TempDir()}
	_, err := r.Run(context.Background(), []Run{run})
	if err == nil || !strings.Contains(err.Error(), "no "+ResultFile) {
		t.Fatalf("err %v", err)
	}
}

// StoreAt holds the store only during a call: in between, another process
// (an `lcl train` child) may open it.
func TestStoreAtReleasesTheStore(t *testing.T) {
	ctx := context.Background()
	res := StoreAt{Dir: t.TempDir()}
	c := simstore.RunConfig{Labels: "fashion-mnist", Model: "cnn", Fraction: 1, Strategy: "sl", Seed: 1}
	if err := res.PutRun(ctx, simstore.Run{ID: c.ID(), Config: c, Status: simstore.RunRunning}); err != nil {
		t.Fatal(err)
	}
	st, err := simstore.Open(res.Dir) // fails with ErrLocked if StoreAt kept it open
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	r, err := res.GetRun(ctx, c.ID())
	if err != nil || r.Config.Model != "cnn" || r.Status != simstore.RunRunning {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := res.GetRun(ctx, "rnothere"); !errors.Is(err, simstore.ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
}

// With Jobs 2 two runs train side by side (the first waits for the second to
// start), each with half the CPUs as --threads when the grid gives none, and
// every run is counted and recorded once.
func TestRunnerJobs(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)
	for i := range runs {
		runs[i].Exec.Threads = 0
	}
	runs[len(runs)-1].Exec.Threads = 3 // a grid's own threads stay
	fake := &fakeTrain{}
	second := make(chan struct{})
	var once sync.Once
	var started atomic.Int32
	launch := func(ctx context.Context, args []string, log io.Writer) error {
		if started.Add(1) == 1 {
			select {
			case <-second:
			case <-time.After(20 * time.Second):
				return errors.New("the second run never started beside the first")
			}
		} else {
			once.Do(func() { close(second) })
		}
		return fake.launch(ctx, args, log)
	}
	var finished []int
	var mu sync.Mutex
	r := &Runner{Launch: launch, Results: store, Root: t.TempDir(), Jobs: 2,
		Progress: func(done, total int, _ time.Duration) { mu.Lock(); finished = append(finished, done); mu.Unlock() }}
	s, err := r.Run(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Done != len(runs) || s.Failed != 0 || len(fake.calls) != len(runs) {
		t.Fatalf("summary %+v after %d calls", s, len(fake.calls))
	}
	var want []int
	for i := range runs {
		want = append(want, i+1)
	}
	if !slices.Equal(finished, want) {
		t.Errorf("progress %v, want one report per run, counting up", finished)
	}
	share := strconv.Itoa(max(1, runtime.NumCPU()/2))
	for _, args := range fake.calls {
		want := share
		out := flagValue(args, "--out")
		if strings.HasSuffix(out, runs[len(runs)-1].ID) {
			want = "3"
		}
		if got := flagValue(args, "--threads"); got != want {
			t.Errorf("%s: --threads %q, want %s", out, got, want)
		}
	}
	for _, run := range runs {
		if rec, err := store.GetRun(context.Background(), run.ID); err != nil || rec.Status != simstore.RunDone {
			t.Errorf("%s: %+v %v", run.ID, rec, err)
		}
	}
}

// StoreAt.Wait waits for a store another process holds instead of failing
// at once.
func TestStoreAtWaitsForTheStore(t *testing.T) {
	dir := t.TempDir()
	held, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (StoreAt{Dir: dir}).GetRun(context.Background(), "rx"); !errors.Is(err, simstore.ErrLocked) {
		held.Close()
		t.Fatalf("no wait, store held: %v, want ErrLocked at once", err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Close()
		close(released)
	}()
	_, err = (StoreAt{Dir: dir, Wait: time.Minute}).GetRun(context.Background(), "rx")
	<-released
	if !errors.Is(err, simstore.ErrNotFound) {
		t.Fatalf("waiting for the store: %v, want ErrNotFound once it was released", err)
	}
}

// A child that exits cleanly with its result as the grid is cancelled
// finished its run: the run is recorded done, and the cancellation is
// still returned although no run was left queued (issue 48, items 1 and 2).
func TestRunnerRecordsARunFinishedAsCancelled(t *testing.T) {
	store := memStore(t)
	run := smallRuns(t)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := &fakeTrain{}
	finishing := func(ctx context.Context, args []string, log io.Writer) error {
		err := fake.launch(ctx, args, log) // result.json written
		cancel()                           // Ctrl-C arrives as the child exits 0
		return err
	}
	r := &Runner{Launch: finishing, Results: store, Root: t.TempDir()}
	s, err := r.Run(ctx, []Run{run})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("grid cancelled as its last run finished: %v (summary %+v), want context.Canceled", err, s)
	}
	rec, gerr := store.GetRun(context.Background(), run.ID)
	if gerr != nil || rec.Status != simstore.RunDone || s.Done != 1 {
		t.Fatalf("run %s exited 0 with its result as the grid was cancelled: record %+v (%v), summary %+v; want it recorded done", run.ID, rec, gerr, s)
	}
}

// Cancelled while the last runs train (none queued), the grid returns the
// cancellation and leaves the runs to resume (issue 48, item 2).
func TestRunnerCancelledDuringTheLastBatch(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)[:2]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	blocking := func(ctx context.Context, args []string, log io.Writer) error {
		if started.Add(1) == 2 {
			cancel() // both runs train: Ctrl-C
		}
		select {
		case <-ctx.Done():
			return errors.New("lcl train: exit status 130")
		case <-time.After(20 * time.Second):
			return errors.New("never cancelled")
		}
	}
	r := &Runner{Launch: blocking, Results: store, Root: t.TempDir(), Jobs: 2}
	s, err := r.Run(ctx, runs)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("grid of 2 runs, --jobs 2, cancelled while both trained: %v (summary %+v), want context.Canceled (exit 130)", err, s)
	}
	for _, run := range runs {
		if rec, err := store.GetRun(context.Background(), run.ID); err != nil || rec.Status != simstore.RunRunning {
			t.Errorf("%s: %+v %v, want its record left running (resumed next time)", run.ID, rec, err)
		}
	}
}

// A run recorded running whose directory holds a finished run's result (a
// grid stopped as the child exited, by an older lcl or a kill) is recorded
// done on the next run of the grid, not relaunched: lcl train refuses to
// resume a finished run, and the grid could never complete (issue 48, item 1).
func TestRunnerRecordsAFinishedRunLeftRunning(t *testing.T) {
	store := memStore(t)
	run := smallRuns(t)[0]
	root := t.TempDir()
	dir := RunDir(root, run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&fakeTrain{}).launch(context.Background(), []string{"--out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := store.PutRun(context.Background(), simstore.Run{ID: run.ID, Config: run.Config, Status: simstore.RunRunning, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	finished := func(ctx context.Context, args []string, log io.Writer) error {
		return errors.New("lcl train: exit status 1: the run already finished (2 epochs; a larger --epochs continues it)")
	}
	r := &Runner{Launch: finished, Results: store, Root: root}
	s, err := r.Run(context.Background(), []Run{run})
	rec, gerr := store.GetRun(context.Background(), run.ID)
	if err != nil || gerr != nil || rec.Status != simstore.RunDone {
		t.Fatalf("run %s left running with result.json in %s: %v, record %+v (%v), summary %+v; want it recorded done", run.ID, dir, err, rec, gerr, s)
	}
}

// Command's child that exits 0 as it is cancelled (it finished its run as
// Ctrl-C came) is no error; one that exits 130 is (issue 48, item 1: exec
// reports the cancellation either way).
func TestCommandChildFinishingAsCancelled(t *testing.T) {
	for _, tc := range []struct {
		status string
		ok     bool
	}{{"0", true}, {"130", false}} {
		marker := filepath.Join(t.TempDir(), "started")
		script := `trap 'exit ` + tc.status + `' INT; : > "$1"; while :; do sleep 0.05; done`
		launch := Command("/bin/sh", []string{"-c", script, "sh"}, 10*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- launch(ctx, []string{marker}, io.Discard) }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("exit %s: the child never started", tc.status)
			}
		}
		cancel()
		err := <-done
		if (err == nil) != tc.ok {
			t.Errorf("child exiting %s on SIGINT: launcher returned %v, want an error: %v", tc.status, err, !tc.ok)
		}
	}
}

// Two runners of one grid on one store and run directory: each run is
// trained once, never by both at once (the second finds the first's
// claim, leaves the run for after the others, then waits for it), and
// both finish with every run done (found last session: both trained the
// same run into one folder and corrupted it).
func TestTwoRunnersClaimRuns(t *testing.T) {
	store := memStore(t)
	runs := smallRuns(t)[:4]
	root := t.TempDir()
	var mu sync.Mutex
	training, trained := map[string]bool{}, map[string]int{}
	firstStarted, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	letGo := func() { released.Do(func() { close(release) }) }
	// Without claims the second runner never waits: let go after a while,
	// and the checks below fail instead of the test hanging.
	time.AfterFunc(10*time.Second, letGo)
	launch := func(ctx context.Context, args []string, log io.Writer) error {
		id := filepath.Base(flagValue(args, "--out"))
		mu.Lock()
		if training[id] {
			t.Errorf("run %s launched while another runner trains it", id)
		}
		training[id] = true
		trained[id]++
		mu.Unlock()
		if id == runs[0].ID {
			once.Do(func() { close(firstStarted) })
			<-release // the first runner holds run 0 until the second waits for it
		} else {
			time.Sleep(50 * time.Millisecond)
		}
		err := (&fakeTrain{}).launch(ctx, args, log)
		mu.Lock()
		training[id] = false
		mu.Unlock()
		return err
	}
	var lines []string
	second := &Runner{Launch: launch, Results: store, Root: root, Logf: func(format string, a ...any) {
		l := fmt.Sprintf(format, a...)
		mu.Lock()
		lines = append(lines, l)
		mu.Unlock()
		if strings.HasPrefix(l, "waiting for "+runs[0].ID) {
			letGo() // the second has left run 0, trained the others and waits
		}
	}}
	first := &Runner{Launch: launch, Results: store, Root: root}
	type outcome struct {
		s   Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := first.Run(context.Background(), runs)
		done <- outcome{s, err}
	}()
	<-firstStarted
	s2, err2 := second.Run(context.Background(), runs)
	o1 := <-done
	if o1.err != nil || err2 != nil {
		t.Fatalf("first: %+v %v; second: %+v %v", o1.s, o1.err, s2, err2)
	}
	if o1.s.Done+s2.Done != 4 || o1.s.Done+o1.s.Skipped != 4 || s2.Done+s2.Skipped != 4 {
		t.Errorf("first %+v, second %+v: want 4 runs trained once between them, each runner's 4 accounted for", o1.s, s2)
	}
	for _, run := range runs {
		if trained[run.ID] != 1 {
			t.Errorf("run %s trained %d times", run.ID, trained[run.ID])
		}
		if rec, err := store.GetRun(context.Background(), run.ID); err != nil || rec.Status != simstore.RunDone {
			t.Errorf("run %s: %+v %v, want done", run.ID, rec, err)
		}
	}
	want := []string{"later " + runs[0].ID, "waiting for " + runs[0].ID, "skip " + runs[0].ID}
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("the second runner's log has no line %q:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

// A claim whose holder is gone (its file left behind, no lock on it)
// never blocks a run.
func TestStaleClaimDoesNotBlock(t *testing.T) {
	store := memStore(t)
	run := smallRuns(t)[0]
	root := t.TempDir()
	dir := RunDir(root, run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ClaimFile), []byte("pid 999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := &fakeTrain{}
	r := &Runner{Launch: fake.launch, Results: store, Root: root}
	start := time.Now()
	s, err := r.Run(context.Background(), []Run{run})
	if err != nil || s.Done != 1 || time.Since(start) > 5*time.Second || len(fake.calls) != 1 || slices.Contains(fake.calls[0], "--resume") {
		t.Fatalf("summary %+v, err %v after %v, calls %q: want the run trained at once, fresh", s, err, time.Since(start), fake.calls)
	}
}
