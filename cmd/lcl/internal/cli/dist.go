package cli

import (
	"bufio"
	"context"
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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/trainer/torch"
)

// distEnv is the torchrun environment contract of one worker process.
type distEnv struct {
	Rank, World, LocalRank, LocalWorld int
	Addr                               string
	Port                               int
}

// launchedEnv marks the workers started by --nproc, so they do not launch
// again.
const launchedEnv = "LCL_NPROC_WORKER"

// distFromEnv reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT; it returns nil when WORLD_SIZE is unset or 1.
func distFromEnv() (*distEnv, error) {
	ws := os.Getenv("WORLD_SIZE")
	if ws == "" || ws == "1" {
		return nil, nil
	}
	num := func(name string, def int) (int, error) {
		v := os.Getenv(name)
		if v == "" {
			if def < 0 {
				return 0, fmt.Errorf("WORLD_SIZE=%s is set but %s is not (the torchrun contract: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)", ws, name)
			}
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: want a number ≥ 0", name, v)
		}
		return n, nil
	}
	d := &distEnv{Addr: os.Getenv("MASTER_ADDR")}
	var err error
	if d.World, err = num("WORLD_SIZE", -1); err != nil {
		return nil, err
	}
	if d.Rank, err = num("RANK", -1); err != nil {
		return nil, err
	}
	if d.Port, err = num("MASTER_PORT", -1); err != nil {
		return nil, err
	}
	if d.LocalRank, err = num("LOCAL_RANK", 0); err != nil {
		return nil, err
	}
	if d.LocalWorld, err = num("LOCAL_WORLD_SIZE", 0); err != nil {
		return nil, err
	}
	if d.Addr == "" {
		d.Addr = "127.0.0.1"
	}
	if d.World < 1 || d.Rank >= d.World {
		return nil, fmt.Errorf("RANK=%d WORLD_SIZE=%d: want 0 ≤ RANK < WORLD_SIZE", d.Rank, d.World)
	}
	if d.Port == 0 || d.Port > 65535 {
		return nil, fmt.Errorf("MASTER_PORT=%d: want a TCP port", d.Port)
	}
	return d, nil
}

// joinGroup joins this worker's process group.
func joinGroup(d *distEnv, backend string, timeout time.Duration) (*torch.Group, error) {
	// Under torchrun the agent hosts the store on MASTER_PORT; each restart
	// of the group gets fresh keys.
	prefix := "lcl"
	if n := os.Getenv("TORCHELASTIC_RESTART_COUNT"); n != "" {
		prefix += "/attempt_" + n
	}
	g, err := torch.NewGroup(torch.GroupConfig{Backend: backend, Addr: d.Addr, Port: d.Port, Rank: d.Rank,
		Size: d.World, Timeout: timeout, Interface: os.Getenv("GLOO_SOCKET_IFNAME"),
		AgentStore: strings.EqualFold(os.Getenv("TORCHELASTIC_USE_AGENT_STORE"), "true"), Prefix: prefix})
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", d.Rank, err)
	}
	return g, nil
}

// freePort asks the kernel for a free TCP port on loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// commandLine rebuilds the arguments of cmd as given (every flag set on
// the command line, local or global), without --nproc.
func commandLine(cmd *cobra.Command) []string {
	args := strings.Fields(cmd.CommandPath())[1:]
	seen := map[string]bool{}
	add := func(fl *pflag.Flag) {
		if seen[fl.Name] || fl.Name == "nproc" {
			return
		}
		seen[fl.Name] = true
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	}
	cmd.Flags().Visit(add)
	cmd.InheritedFlags().Visit(add)
	return args
}

// worker is one process started by launch.
type worker struct {
	rank int
	cmd  *exec.Cmd
	err  error // of Wait
	at   time.Time
	ours bool // ended by a signal the launcher sent
}

// launch runs nproc workers of this binary on this machine with the
// torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR=127.0.0.1, MASTER_PORT a free port) and the same arguments.
// Rank 0's output is passed through; other ranks' stderr lines are prefixed
// with "rank N: ". When a worker fails, the others are stopped (SIGTERM,
// then SIGKILL after 10 s) and the error names the failing rank; on
// cancellation (Ctrl-C) every worker receives SIGINT and writes its
// checkpoint (rank 0) before the launcher returns.
func launch(ctx context.Context, f *Factory, exe string, args []string, nproc int, threads int) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("--nproc: free port: %w", err)
	}
	f.Logf("lcl train: starting %d workers (Gloo over 127.0.0.1:%d, %d libtorch threads each)", nproc, port, threads)
	ws := make([]*worker, nproc)
	var outs sync.WaitGroup
	errw := &lockedWriter{w: f.IO.Err}
	for r := range nproc {
		c := exec.Command(exe, args...)
		c.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r),
			"WORLD_SIZE="+strconv.Itoa(nproc), "LOCAL_WORLD_SIZE="+strconv.Itoa(nproc),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), launchedEnv+"=1",
			"OMP_NUM_THREADS="+strconv.Itoa(threads))
		// Own process group: a terminal's Ctrl-C reaches the launcher only,
		// which forwards it once; Pdeathsig stops orphans of a killed launcher.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		c.Stdin = nil
		if r == 0 {
			c.Stdout, c.Stderr = f.IO.Out, errw
		} else {
			c.Stdout = io.Discard
			pr, pw := io.Pipe()
			c.Stderr = pw
			outs.Go(func() {
				sc := bufio.NewScanner(pr)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					fmt.Fprintf(errw, "rank %d: %s\n", r, sc.Text())
				}
				io.Copy(io.Discard, pr)
			})
			defer pw.Close()
		}
		ws[r] = &worker{rank: r, cmd: c}
	}
	// The launcher's goroutine may be locked to a thread that later exits;
	// Pdeathsig follows the thread that started the child, so keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exited := make(chan *worker, nproc)
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
			w.at = time.Now()
			if pw, ok := w.cmd.Stderr.(*io.PipeWriter); ok {
				pw.Close()
			}
			exited <- w
		}()
	}
	signalAll := func(sig syscall.Signal, skip map[*worker]bool) {
		for _, w := range ws {
			if !skip[w] {
				w.ours = true
				w.cmd.Process.Signal(sig)
			}
		}
	}
	done := map[*worker]bool{}
	var failed []*worker
	var kill <-chan time.Time
	var stopping bool
	cancel := ctx.Done()
	for len(done) < nproc {
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
	return errors.New(msg + "; continue with the same command and --resume")
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
