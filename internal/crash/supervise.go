package crash

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// childFD is the descriptor on which a supervised lcl finds the pipe to
// write Go's crash output to, named by the variable childVar.
const (
	childFD  = 3
	childVar = "LCL_CRASH_FD"
)

// maxCrashOutput bounds the crash output kept for the report (a fatal error
// prints every goroutine's stack).
const maxCrashOutput = 16 << 20

// Supervise makes a crash that no recover can catch — a panic in a
// goroutine lcl did not start (a library's), a fatal runtime error (out
// of memory, concurrent map writes), a fatal signal — end like every other
// crash: the report in a file, one line naming it, and ExitCode instead of
// the Go runtime's exit status 2 (the usage-error code).
//
// Called first thing in main, it runs the program again as a child with
// the same arguments and environment (plus what env adds, when given),
// passing on the signals sent to it alone, and returns the child's exit
// status with supervised true: main exits with it. In that child (and
// where supervision is off) it returns supervised false at once, after
// pointing the runtime's crash output (debug.SetCrashOutput) at a pipe the
// parent reads: on exit status 2 with crash output, the parent writes the
// report. The child stays in the parent's process group, so a terminal's
// Ctrl-C, Ctrl-Z and window changes reach both as they would reach one
// process; a signal sent to the whole group (Ctrl-C, Slurm's scancel)
// then reaches the child twice, directly and passed on, a moment apart:
// the child takes signals that close together as one (cli.Run). It dies
// with the parent (Pdeathsig). Commands that must be the process their
// caller started (a plugin serving its handshake) pass supervise false.
func Supervise(supervise bool, env func([]string) []string) (code int, supervised bool) {
	if fd := os.Getenv(childVar); fd != "" {
		os.Unsetenv(childVar)
		if fd == fmt.Sprint(childFD) {
			syscall.CloseOnExec(childFD) // not inherited by lcl's own children
			debug.SetCrashOutput(os.NewFile(childFD, "crash-output"), debug.CrashOptions{})
		}
		return 0, false
	}
	if !supervise {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false // run unsupervised rather than not at all
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, false
	}
	e := os.Environ()
	if env != nil {
		e = env(e)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(e, fmt.Sprintf("%s=%d", childVar, childFD))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that started the child: keep it.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		r.Close()
		w.Close()
		return 0, false
	}
	w.Close()
	out := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, maxCrashOutput))
		io.Copy(io.Discard, r)
		out <- b
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var quit bool
	for {
		select {
		case sig := <-sigs:
			s := sig.(syscall.Signal)
			quit = quit || s == syscall.SIGQUIT
			cmd.Process.Signal(s)
		case err := <-done:
			signal.Stop(sigs)
			return finish(err, <-out, quit), true
		}
	}
}

// forwarded are the signals the parent passes on to the child: those that
// end a process (job control and window changes reach the whole process
// group from the terminal, and keep their default actions).
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// finish turns the child's end into the parent's exit status: a crash
// (status 2 with crash output, not asked for with SIGQUIT) is reported; a
// child killed by a signal kills the parent with it.
func finish(err error, crashOut []byte, quit bool) int {
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "lcl:", err)
		return 1
	}
	if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		signal.Reset(st.Signal())
		syscall.Kill(os.Getpid(), st.Signal())
		return 128 + int(st.Signal())
	}
	code := ee.ExitCode()
	if code != 2 || len(bytes.TrimSpace(crashOut)) == 0 || quit {
		return code
	}
	what := crashLine(crashOut)
	path, _ := reportOutput(what, crashOut)
	fmt.Fprintln(os.Stderr, Message(what, path))
	return ExitCode
}

// crashLine says what happened: the panic line of Go's crash output, else
// (a fatal runtime error, whose message goes to stderr only) where: the
// first function outside the runtime on the crashing goroutine's stack.
func crashLine(out []byte) string {
	lines := strings.Split(string(out), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimSpace(l)
		}
	}
	for _, l := range lines {
		if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "goroutine ") {
			continue
		}
		fn := l
		if i := strings.LastIndex(fn, "("); i > 0 {
			fn = fn[:i]
		}
		if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "internal/runtime/") {
			return "fatal runtime error (its message is on stderr above) in " + fn
		}
	}
	return "fatal runtime error (its message is on stderr above)"
}

// reportOutput writes a report holding the runtime's crash output.
func reportOutput(what string, out []byte) (string, error) {
	return writeReport(fmt.Sprintf("lcl crashed at %s\ncommand: %q\ngo: %s %s/%s\n%s\n\n%s",
		now(), os.Args, runtime.Version(), runtime.GOOS, runtime.GOARCH, what, out))
}
