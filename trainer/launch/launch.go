package launch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lcl-project/lcl/internal/crash"
)

// Options configure Run.
type Options struct {
	// Exe and Args are the worker command (normally the running lcl and its
	// own arguments without --nproc); Exe "" is the running program.
	Exe  string
	Args []string
	// NProc workers, each with Threads libtorch/OpenMP threads.
	NProc, Threads int
	// Stdout receives rank 0's standard output; Stderr rank 0's standard
	// error and the other ranks' standard error, each line prefixed with
	// "rank N: ". The other ranks' standard output is discarded.
	Stdout, Stderr io.Writer
	// Logf, if set, is told where the group meets before the workers start.
	Logf func(format string, a ...any)
}

// worker is one process started by Run.
type worker struct {
	rank int
	cmd  *exec.Cmd
	err  error // of Wait
	ours bool  // ended by a signal the launcher sent
}

// Run starts o.NProc workers on this machine with the torchrun environment
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT a free port, WorkerVar, a fresh SecretVar) and waits for them. When a worker
// fails, the others are stopped (SIGTERM, then SIGKILL after 10 s) and the
// error names the failing rank; on cancellation (Ctrl-C) every worker
// receives SIGINT and writes its checkpoint (rank 0) before Run returns the
// context's error. Every worker runs in its own process group, killed at the
// end, so that nothing a worker started (strategy plugins) survives it.
func Run(ctx context.Context, o Options) error {
	nproc := o.NProc
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--nproc: %w", err)
		}
		o.Exe = exe
	}
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("--nproc: free port: %w", err)
	}
	// The workers' rendezvous store listens on 127.0.0.1 only (MASTER_ADDR),
	// and its keys are named after a secret made for this run, which only
	// the workers get.
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("--nproc: run secret: %w", err)
	}
	secret := hex.EncodeToString(raw[:])
	if o.Logf != nil {
		o.Logf("starting %d workers (Gloo over 127.0.0.1:%d, %d libtorch threads each)", nproc, port, o.Threads)
	}
	var outs sync.WaitGroup
	ws, pipes := o.workers(port, secret, &outs)
	for _, pw := range pipes {
		defer pw.Close()
	}
	// The launcher's goroutine may be locked to a thread that later exits;
	// Pdeathsig follows the thread that started the child, so keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exited := make(chan *worker, nproc)
	if err := startAll(ws, exited); err != nil {
		return err
	}
	failed := supervise(ctx, ws, exited)
	// A worker killed outright leaves its own children (strategy plugin
	// processes) behind: they share its process group.
	for _, w := range ws {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	}
	outs.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(failed) == 0 {
		return nil
	}
	return failure(failed, nproc)
}

// workers are the commands of the ranks, not started; rank 0 writes to
// o.Stdout and o.Stderr, the others' standard error goes through a pipe
// (returned: closed when Run ends) whose lines outs prefixes with the rank.
func (o Options) workers(port int, secret string, outs *sync.WaitGroup) ([]*worker, []*io.PipeWriter) {
	nproc := o.NProc
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	ws := make([]*worker, nproc)
	var pipes []*io.PipeWriter
	errw := &lockedWriter{w: stderr}
	for r := range nproc {
		c := exec.Command(o.Exe, o.Args...)
		c.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r),
			"WORLD_SIZE="+strconv.Itoa(nproc), "LOCAL_WORLD_SIZE="+strconv.Itoa(nproc),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), WorkerVar+"=1",
			"OMP_NUM_THREADS="+strconv.Itoa(o.Threads), SecretVar+"="+secret)
		// Own process group: a terminal's Ctrl-C reaches the launcher only,
		// which forwards it once; Pdeathsig stops orphans of a killed launcher.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		c.Stdin = nil
		if r == 0 {
			c.Stdout, c.Stderr = stdout, errw
		} else {
			c.Stdout = io.Discard
			pr, pw := io.Pipe()
			c.Stderr = pw
			outs.Go(func() {
				defer crash.Handle()
				prefixLines(errw, pr, fmt.Sprintf("rank %d: ", r))
			})
			pipes = append(pipes, pw)
		}
		ws[r] = &worker{rank: r, cmd: c}
	}
	return ws, pipes
}

// startAll starts the workers; each one's exit is sent on exited. When
// one does not start, those started are killed and waited for.
func startAll(ws []*worker, exited chan *worker) error {
	started := 0
	for _, w := range ws {
		if err := w.cmd.Start(); err != nil {
			for _, o := range ws[:started] {
				o.cmd.Process.Kill()
			}
			for range started {
				<-exited
			}
			return fmt.Errorf("--nproc: starting rank %d: %w", w.rank, err)
		}
		started++
		go func() {
			w.err = w.cmd.Wait()
			if pw, ok := w.cmd.Stderr.(*io.PipeWriter); ok {
				pw.Close()
			}
			exited <- w
		}()
	}
	return nil
}

// supervise waits for every worker and returns those that failed: after
// the first failure the others get SIGTERM, on cancellation SIGINT, and
// SIGKILL when they have not ended 10 s, or a minute, later.
func supervise(ctx context.Context, ws []*worker, exited chan *worker) (failed []*worker) {
	signalAll := func(sig syscall.Signal, skip map[*worker]bool) {
		for _, w := range ws {
			if !skip[w] {
				w.ours = true
				w.cmd.Process.Signal(sig)
			}
		}
	}
	done := map[*worker]bool{}
	var kill <-chan time.Time
	var stopping bool
	cancel := ctx.Done()
	for len(done) < len(ws) {
		select {
		case w := <-exited:
			done[w] = true
			if w.err != nil && !stopping {
				failed = append(failed, w)
				// Stop the others (they would fail on their own, at their
				// next collective or after the timeout).
				stopping = true
				kill = time.After(10 * time.Second)
				signalAll(syscall.SIGTERM, done)
			} else if w.err != nil {
				failed = append(failed, w)
			}
		case <-cancel:
			cancel = nil
			stopping = true
			signalAll(syscall.SIGINT, done)
			kill = time.After(time.Minute)
		case <-kill:
			signalAll(syscall.SIGKILL, done)
			kill = nil
		}
	}
	return failed
}

// failure names the rank that caused the group to fail.
func failure(failed []*worker, nproc int) error {
	cause := failed[0]
	for _, w := range failed {
		// A rank ended by a signal nobody here sent is the cause; the
		// others failed because it went.
		if st, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() && !w.ours {
			cause = w
			break
		}
	}
	var others []string
	for _, w := range failed {
		if w != cause && !w.ours {
			others = append(others, strconv.Itoa(w.rank))
		}
	}
	msg := fmt.Sprintf("worker rank %d of %d (pid %d) failed: %v", cause.rank, nproc, cause.cmd.Process.Pid, cause.err)
	if len(others) > 0 {
		msg += "; stopped the other ranks (" + strings.Join(others, ", ") + " failed after it)"
	} else if nproc > 1 {
		msg += "; stopped the other ranks"
	}
	if st, ok := cause.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Exited() && st.ExitStatus() == ExitUsage {
		// Its message (above) says what to fix; nothing was trained.
		return &UsageError{errors.New(msg + "; it refused the command line: fix what it says and run it again")}
	}
	return errors.New(msg + "; continue with the same command and --resume")
}

// ExitUsage is the exit code of a worker that refused its command line.
const ExitUsage = 2

// UsageError is a group that failed because a worker refused its command
// line (exit code ExitUsage): the launcher's own caller exits with it too.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// freePort asks the kernel for a free TCP port on loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// prefixLines copies r to w with prefix at the start of every line; a line
// of any length passes whole (in pieces of the buffer's size).
func prefixLines(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReaderSize(r, 64<<10)
	start := true
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			buf = buf[:0]
			if start {
				buf = append(buf, prefix...)
			}
			buf = append(buf, chunk...)
			w.Write(buf)
			start = chunk[len(chunk)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if !start {
				w.Write([]byte("\n"))
			}
			io.Copy(io.Discard, r)
			return
		}
	}
}

// lockedWriter serialises the writes of several workers' output copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
