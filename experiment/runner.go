package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lcl-project/lcl/simstore"
)

// Launcher runs `lcl` with args to completion, sending its output to log.
// The real one starts a subprocess (Command); tests pass a fake.
type Launcher func(ctx context.Context, args []string, log io.Writer) error

// Results is where the runner keeps run records: StoreAt, which opens the
// store only for each call so that the `lcl train` subprocesses can open
// it in between.
type Results interface {
	GetRun(ctx context.Context, id string) (*simstore.Run, error)
	PutRun(ctx context.Context, r simstore.Run) error
}

// StoreAt keeps run records in the store in Dir, opened for each call only:
// the `lcl train` children open the store themselves while they run, and
// one process at a time may have it open. Wait is how long a call waits for
// the store while a child has it (simstore.WaitLocked).
type StoreAt struct {
	Dir  string
	Wait time.Duration
}

var _ Results = StoreAt{}

// With runs fn on the store, opened for the call (with opts, e.g.
// simstore.ReadOnly()).
func (s StoreAt) With(fn func(*simstore.Store) error, opts ...simstore.Option) error {
	st, err := simstore.Open(s.Dir, append(opts, simstore.WaitLocked(s.Wait))...)
	if err != nil {
		return err
	}
	err = fn(st)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}

// GetRun implements Results.
func (s StoreAt) GetRun(ctx context.Context, id string) (r *simstore.Run, err error) {
	err = s.With(func(st *simstore.Store) error { r, err = st.GetRun(ctx, id); return err }, simstore.ReadOnly())
	return r, err
}

// PutRun implements Results.
func (s StoreAt) PutRun(ctx context.Context, r simstore.Run) error {
	return s.With(func(st *simstore.Store) error { return st.PutRun(ctx, r) })
}

// Statuses returns the stored status (simstore.RunDone, ...) of each of
// runs that the store holds, by run id; none while the store does not exist.
func (s StoreAt) Statuses(ctx context.Context, runs []Run) (map[string]string, error) {
	statuses := map[string]string{}
	if _, err := os.Stat(s.Dir); err != nil {
		return statuses, nil
	}
	err := s.With(func(st *simstore.Store) error {
		for _, r := range runs {
			if rec, err := st.GetRun(ctx, r.ID); err == nil {
				statuses[r.ID] = rec.Status
			}
		}
		return nil
	})
	return statuses, err
}

// Runner executes a grid's runs, Jobs at a time, resumably.
type Runner struct {
	Launch  Launcher
	Results Results
	// Root holds one directory per run, named by the run's id.
	Root string
	// Jobs is how many runs train at once (≤ 1: one after another). A run
	// whose grid gives no threads then gets the CPUs' share, NumCPU/Jobs
	// (at least 1), so that the runs side by side do not oversubscribe the
	// cores.
	Jobs int
	// Progress, if set, is told after each run how many are finished (done
	// before or now, or failed) out of the total, with an estimate of the time left.
	Progress func(finished, total int, eta time.Duration)
	// Logf, if set, receives one line per event (skip, start, done, failure).
	Logf func(format string, a ...any)
}

// Summary counts what a Run call did.
type Summary struct {
	Total, Skipped, Done, Failed int
	Failures                     []string // "id: error" per failed run
}

// Run executes every run that is not done yet, Jobs at a time. A run whose
// directory holds work from an earlier attempt is relaunched with --resume.
// A failed run is recorded and the grid goes on; the error returned lists
// the failures. A run another runner is training (its claim, ClaimFile, is
// held) is left for after the others, then waited for, and counted done
// before when that runner finished it. On cancellation it stops after
// signalling the running children and returns the context's error,
// whether or not runs were still queued; runs finished so far are kept, a
// child that exited cleanly with its result as the cancellation came
// among them.
func (r *Runner) Run(ctx context.Context, runs []Run) (Summary, error) {
	jobs := max(r.Jobs, 1)
	t := &tally{s: Summary{Total: len(runs)}, jobs: jobs, progress: r.Progress}
	later, stop := r.pass(ctx, runs, t, jobs, false)
	if stop == nil && len(later) > 0 {
		_, stop = r.pass(ctx, later, t, jobs, true)
	}
	s := t.s // the passes' goroutines are done
	if stop == nil {
		// Cancelled during the last batch: no run was left to launch,
		// but the runs stopped are not finished.
		stop = ctx.Err()
	}
	if stop != nil {
		return s, stop
	}
	if s.Failed > 0 {
		return s, &FailedError{Failed: s.Failed, Total: s.Total, Failures: s.Failures}
	}
	return s, nil
}

// pass launches the runs not done, jobs at a time, each under its claim.
// It returns, in their order, the runs another runner holds the claim of
// (wait: it waits for each claim instead), and a store error or the
// cancellation that stopped it.
func (r *Runner) pass(ctx context.Context, runs []Run, t *tally, jobs int, wait bool) (later []Run, stop error) {
	slots := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := make([]bool, len(runs))
	for i, run := range runs {
		if stop = ctx.Err(); stop != nil {
			break
		}
		prev, err := r.Results.GetRun(ctx, run.ID)
		if err != nil && !errors.Is(err, simstore.ErrNotFound) {
			stop = fmt.Errorf("run %s: %w", run.ID, err)
			break
		}
		if prev != nil && prev.Status == simstore.RunDone {
			r.logf("skip %s %s: done", run.ID, run.Describe())
			t.skipped()
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if stop = ctx.Err(); stop != nil {
			break
		}
		if jobs > 1 && run.Exec.Threads == 0 {
			run.Exec.Threads = max(1, runtime.NumCPU()/jobs)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if !r.claimed(ctx, run, t, wait) {
				mu.Lock()
				held[i] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, run := range runs {
		if held[i] {
			later = append(later, run)
		}
	}
	return later, stop
}

// claimed trains run under its claim and reports true, or, when another
// runner holds the claim and wait is false, leaves it and reports false.
// Waiting, it polls the claim until it is free (a dead holder's is free at
// once); the run is then skipped if the other runner finished it.
func (r *Runner) claimed(ctx context.Context, run Run, t *tally, wait bool) bool {
	dir := RunDir(r.Root, run.ID)
	f, held, holder, err := tryClaim(dir)
	if held && !wait {
		r.logf("later %s %s: another lcl experiment run is training it (%s); back to it after the others", run.ID, run.Describe(), holder)
		return false
	}
	if held {
		r.logf("waiting for %s %s: another lcl experiment run is training it (%s)", run.ID, run.Describe(), holder)
	}
	for held && err == nil {
		select {
		case <-ctx.Done():
			return true // stopped before it started: the next run of the grid has it
		case <-time.After(claimPoll):
		}
		f, held, _, err = tryClaim(dir)
	}
	if err != nil {
		r.logf("FAILED %s %s: %v", run.ID, run.Describe(), err)
		t.finished(run, 0, err)
		return true
	}
	if f != nil {
		defer f.Close()
	}
	// Another runner may have finished it since this one looked.
	if prev, err := r.Results.GetRun(ctx, run.ID); err == nil && prev.Status == simstore.RunDone {
		r.logf("skip %s %s: done (by another lcl experiment run)", run.ID, run.Describe())
		t.skipped()
		return true
	}
	r.launch(withHeld(ctx, f), run, t)
	return true
}

// claimPoll is how often a runner waiting for another's run checks its
// claim.
const claimPoll = 200 * time.Millisecond

// heldKey is the context key of the file a launched child holds for its
// life (the run's claim).
type heldKey struct{}

// withHeld is ctx carrying f (nil: none) for Command, which passes it to
// the child: the claim then lasts as long as the child, even if the
// runner dies first.
func withHeld(ctx context.Context, f *os.File) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, heldKey{}, f)
}

// launch trains one run and counts its outcome in t.
func (r *Runner) launch(ctx context.Context, run Run, t *tally) {
	dir := RunDir(r.Root, run.ID)
	start := time.Now()
	err := r.one(ctx, run, dir)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		r.logf("stopped %s %s: it resumes on the next run of the grid", run.ID, run.Describe())
		return
	}
	if err != nil {
		// One log line each: the error's lines hold the end of the run's log.
		lines := strings.Split(err.Error(), "\n")
		r.logf("FAILED %s %s: %s", run.ID, run.Describe(), lines[0])
		for _, l := range lines[1:] {
			r.logf("%s", l)
		}
	} else {
		r.logf("done %s %s (%s)", run.ID, run.Describe(), time.Since(start).Round(time.Second))
	}
	t.finished(run, time.Since(start), err)
}

// tally is a Run call's counts, shared by the runs training side by side.
type tally struct {
	mu       sync.Mutex
	s        Summary
	jobs     int
	spent    time.Duration // summed over the runs launched (done or failed)
	progress func(finished, total int, eta time.Duration)
}

func (t *tally) skipped() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.Skipped++
	t.report()
}

func (t *tally) finished(run Run, took time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spent += took
	if err != nil {
		t.s.Failed++
		t.s.Failures = append(t.s.Failures, fmt.Sprintf("%s (%s): %v", run.ID, run.Describe(), err))
	} else {
		t.s.Done++
	}
	t.report()
}

// report tells progress the count and the time left: the mean time of a
// run launched so far, times the runs left, over the jobs side by side.
func (t *tally) report() {
	if t.progress == nil {
		return
	}
	launched := t.s.Done + t.s.Failed
	finished := t.s.Skipped + launched
	var eta time.Duration
	if launched > 0 {
		left := t.s.Total - finished
		eta = t.spent / time.Duration(launched) * time.Duration(left) / time.Duration(min(t.jobs, max(left, 1)))
	}
	t.progress(finished, t.s.Total, eta)
}

// FailedError is a grid whose runs did not all finish: a summary line,
// then each failure (with the end of its log) on lines of its own.
type FailedError struct {
	Failed, Total int
	Failures      []string
}

func (e *FailedError) Error() string { return strings.Join(e.Lines(), "\n") }

// Lines are the message's lines, each printed as one line (a printer
// escapes what else a line holds: lines of a run's log may hold anything).
// The first says what failed: the count and the first failed run with
// the first line of its error.
func (e *FailedError) Lines() []string {
	first := fmt.Sprintf("%d of %d runs failed", e.Failed, e.Total)
	if len(e.Failures) > 0 {
		what, _, _ := strings.Cut(e.Failures[0], "\n")
		if len(e.Failures) == 1 {
			first += ": " + what
		} else {
			first += "; the first, " + what
		}
	}
	lines := []string{first + "; each with the end of its log:"}
	for _, f := range e.Failures {
		for l := range strings.SplitSeq(f, "\n") {
			lines = append(lines, "  "+l)
		}
	}
	return lines
}

// one launches a single run and records its outcome. It returns the
// context's error only when the run was stopped before it finished.
func (r *Runner) one(ctx context.Context, run Run, dir string) error {
	resume := hasWork(dir)
	if resume {
		// A child that finished as its grid was stopped, or whose record
		// was lost, left its result: record it rather than relaunch a
		// finished run (lcl train refuses to resume one).
		if done, err := ReadResult(run.Config, dir); err == nil {
			r.logf("recording %s %s: its directory holds the result of a finished run", run.ID, run.Describe())
			return r.Results.PutRun(context.WithoutCancel(ctx), done)
		}
	}
	args, err := run.TrainArgs(dir, resume)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, _ := json.MarshalIndent(run.Config, "", "  ")
	if err := writeFileAtomic(filepath.Join(dir, ConfigFile), append(cfg, '\n')); err != nil {
		return err
	}
	rec := simstore.Run{ID: run.ID, Config: run.Config, Status: simstore.RunRunning, Dir: dir}
	if err := r.Results.PutRun(ctx, rec); err != nil {
		return fmt.Errorf("record start: %w", err)
	}
	logPath := filepath.Join(dir, "lcl-train.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	verb := "start"
	if resume {
		verb = "resume"
	}
	r.logf("%s %s %s", verb, run.ID, run.Describe())
	fmt.Fprintf(logFile, "# %s lcl %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(args, " "))
	runErr := r.Launch(ctx, args, logFile)
	logFile.Close()
	if ctx.Err() != nil && runErr != nil {
		return ctx.Err() // the record stays "running": the next attempt resumes
	}
	// A child that exited cleanly finished its run, even if the grid was
	// cancelled as it did: its result is recorded below.
	if runErr != nil {
		rec.Status = simstore.RunFailed
		if err := r.Results.PutRun(context.WithoutCancel(ctx), rec); err != nil {
			return fmt.Errorf("%v (and recording the failure: %w)", runErr, err)
		}
		return fmt.Errorf("%w%s%s", runErr, lastLine(logPath), tail(logPath))
	}
	done, err := ReadResult(run.Config, dir)
	if err != nil {
		rec.Status = simstore.RunFailed
		_ = r.Results.PutRun(context.WithoutCancel(ctx), rec)
		return fmt.Errorf("lcl train exited cleanly but: %w", err)
	}
	return r.Results.PutRun(context.WithoutCancel(ctx), done)
}

func (r *Runner) logf(format string, a ...any) {
	if r.Logf != nil {
		r.Logf(format, a...)
	}
}

// hasWork reports whether dir holds output of an earlier attempt (anything
// besides the runner's own files), in which case the run is resumed.
func hasWork(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); n != ConfigFile && n != "lcl-train.log" && !strings.HasPrefix(n, ".") {
			return true
		}
	}
	return false
}

// lastLine is ": " and the last line of a log (a failed lcl train's
// error), "" for an empty log.
func lastLine(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" && !strings.HasPrefix(l, "# ") {
		return ": " + l
	}
	return ""
}

// tail returns the last lines of a log for an error message.
func tail(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "\n    log " + path + ":\n      " + strings.Join(lines, "\n      ")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Command returns a Launcher that runs the binary at path (normally the running
// lcl, os.Executable()) with extra leading args (global flags such as
// --store). On cancellation the child gets SIGINT, so that it can write a
// checkpoint, and is killed if it has not exited after grace. A child that
// exits 0 all the same finished its run: that is no error. The child
// holds the run's claim (ClaimFile) with the runner.
func Command(path string, leading []string, grace time.Duration) Launcher {
	return func(ctx context.Context, args []string, log io.Writer) error {
		cmd := exec.CommandContext(ctx, path, append(append([]string{}, leading...), args...)...)
		cmd.Stdout = log
		cmd.Stderr = log
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
		cmd.WaitDelay = grace
		if f, ok := ctx.Value(heldKey{}).(*os.File); ok {
			cmd.ExtraFiles = []*os.File{f} // the run's claim, for the child's life
		}
		if err := cmd.Run(); err != nil {
			if cmd.ProcessState != nil && cmd.ProcessState.Success() && ctx.Err() != nil {
				// Cancelled as it finished: Run reports the cancellation,
				// but the child exited 0 and its run is complete.
				return nil
			}
			return fmt.Errorf("lcl %s: %w", args[0], err)
		}
		return nil
	}
}
