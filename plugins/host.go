package plugins

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/plugins/internal/shim"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/source"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// Default timeouts of a Host.
const (
	DefaultTimeout         = time.Minute
	DefaultFeaturesTimeout = 30 * time.Minute
	DefaultComputeTimeout  = 30 * time.Minute
	DefaultStartTimeout    = 30 * time.Second
)

// ProtocolVersion is the plugin protocol version this host speaks.
const ProtocolVersion = shim.ProtocolVersion

// Host starts plugins and keeps track of them; Close ends them all. The zero
// value is ready to use with the defaults documented on each field.
type Host struct {
	// Dirs is the plugin search path; nil means SearchPath().
	Dirs []string
	// Self is the command that serves the built-ins, to which KIND NAME is
	// appended; nil means this executable with "plugins serve".
	Self []string
	// Timeout bounds each call (Describe, Begin, Plan, Observe); 0 means
	// $LCL_PLUGIN_TIMEOUT (a Go duration such as 90s) or else DefaultTimeout.
	Timeout time.Duration
	// FeaturesTimeout bounds one Features stream; 0 = DefaultFeaturesTimeout.
	FeaturesTimeout time.Duration
	// ComputeTimeout bounds one similarity Compute; 0 = DefaultComputeTimeout.
	ComputeTimeout time.Duration
	// StartTimeout bounds a plugin's whole start, from starting its process
	// to its handshake; 0 means $LCL_PLUGIN_START_TIMEOUT (a Go duration
	// such as 2m) or else DefaultStartTimeout. A plugin that has not
	// answered by then is killed with everything it started.
	StartTimeout time.Duration
	// Env is added to every plugin's environment (before the host's own,
	// which wins on a clash, so use names the host does not set).
	Env []string
	// Log receives go-plugin's log and the plugins' stderr; nil discards them
	// (the last lines of a crashed plugin's stderr still reach its error).
	Log io.Writer
	// Lock is the plugin lock file written by `lcl plugins pin`; "" means
	// LockPath(). A plugin pinned there starts only if its executable still
	// has the pinned SHA-256 (go-plugin's SecureConfig checks it just before
	// starting the process) and is at the pinned path.
	Lock string
	// RequirePinned refuses every plugin that is not built in and has no
	// pin in Lock.
	RequirePinned bool
	// MatrixDir is where each plugin gets a private folder for the large
	// matrices it is sent or returns (similarity, targets: a 21,843-class
	// matrix is 1.9 GB); "" means $LCL_PLUGIN_MATRIX_DIR, else /dev/shm
	// where it has 4 GiB free (the matrices then never touch a disk), else
	// the temporary folder.
	MatrixDir string
	// InlineLimit is the size in bytes above which a matrix travels as a
	// file rather than inside a message; 0 means 64 MiB.
	InlineLimit int64

	mu    sync.Mutex
	conns []*conn
}

func (h *Host) timeout() time.Duration {
	return orEnv(h.Timeout, "LCL_PLUGIN_TIMEOUT", positiveDuration, constant(DefaultTimeout))
}

func (h *Host) startTimeout() time.Duration {
	return orEnv(h.StartTimeout, "LCL_PLUGIN_START_TIMEOUT", positiveDuration, constant(DefaultStartTimeout))
}

// matrixDir is where the plugins' matrix folders go (MatrixDir).
func (h *Host) matrixDir() string {
	return orEnv(h.MatrixDir, "LCL_PLUGIN_MATRIX_DIR", nonEmpty, matrixBase)
}

// orEnv is a Host setting: v when it is set (positive, non-empty), else the
// environment variable env when parse accepts it, else def().
func orEnv[T cmp.Ordered](v T, env string, parse func(string) (T, bool), def func() T) T {
	var zero T
	if v > zero {
		return v
	}
	if x, ok := parse(os.Getenv(env)); ok {
		return x
	}
	return def()
}

func positiveDuration(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func nonEmpty(s string) (string, bool) { return s, s != "" }

func constant[T any](v T) func() T { return func() T { return v } }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Close kills every plugin this host started, with its process group.
func (h *Host) Close() {
	h.mu.Lock()
	conns := h.conns
	h.conns = nil
	h.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}

func (h *Host) lockPath() string {
	if h.Lock != "" {
		return h.Lock
	}
	return LockPath()
}

// BuiltinNames lists the built-in plugins of a kind.
func BuiltinNames(kind string) []string {
	switch kind {
	case KindStrategy:
		return strategy.Names()
	case KindSimilarity:
		return source.Names()
	}
	return nil
}

func isBuiltin(kind, name string) bool { return slices.Contains(BuiltinNames(kind), name) }

// Resolve says where a plugin comes from: "built-in", or the path of the
// executable on the search path. Built-ins take precedence over executables
// of the same name, so a stray file cannot replace lcl's own methods.
func (h *Host) Resolve(kind, name string) (string, error) {
	if isBuiltin(kind, name) {
		return "built-in", nil
	}
	dirs := h.Dirs
	if dirs == nil {
		dirs = SearchPath()
	}
	for _, f := range Discover(dirs) {
		if f.Kind == kind && f.Name == name {
			return f.Path, nil
		}
	}
	var known []string
	known = append(known, BuiltinNames(kind)...)
	for _, f := range Discover(dirs) {
		if f.Kind == kind {
			known = append(known, f.Name)
		}
	}
	return "", fmt.Errorf("unknown %s plugin %q%s (not built in, and no executable lcl-%s-%s in %s; known: %s)",
		kind, name, suggest.DidYouMean(name, known), kind, name, strings.Join(dirs, ":"), strings.Join(known, ", "))
}

// BuiltinStrategiesTaking names the built-in strategies that declare the
// parameter param (for the hint of a parameter given to another).
func BuiltinStrategiesTaking(param string) []string {
	var out []string
	for _, name := range strategy.Names() {
		st, _ := strategy.New(name)
		info, err := st.Describe(context.Background())
		if err != nil {
			continue
		}
		if slices.ContainsFunc(info.Params, func(p sdk.Param) bool { return p.Name == param }) {
			out = append(out, name)
		}
	}
	return out
}

// conn is one running plugin.
type conn struct {
	label   string // e.g. strategy plugin "lcl" (built-in)
	client  *plugin.Client
	stderr  *tail
	pid     int           // of the plugin process, the leader of its own process group
	done    chan struct{} // closed by kill: releases the thread that started the process
	once    sync.Once
	share   string                // the plugin's private matrix folder, removed with it
	sockets string                // the folder of its Unix socket, removed with it
	rpc     plugin.ClientProtocol // once started
}

// kill stops the plugin and everything it started (its process group), and
// removes its matrix folder.
func (c *conn) kill() {
	c.once.Do(func() {
		if c.pid > 0 && !c.client.Exited() {
			killGroup(c.pid)
		}
		c.client.Kill()
		close(c.done)
		if c.share != "" {
			os.RemoveAll(c.share)
		}
		if c.sockets != "" {
			os.RemoveAll(c.sockets)
		}
	})
}

// sharer is a dispensed client that sends and takes large matrices as
// files.
type sharer interface{ Share(shim.Sharing) }

// admit decides whether the plugin executable at path may run: it must
// pass CheckTrusted, match its pin in the lock file if it has one, and
// have one when RequirePinned is set. It returns the SecureConfig that
// makes go-plugin verify the pinned digest right before starting it.
func (h *Host) admit(kind, name, path string) (*plugin.SecureConfig, error) {
	if err := CheckTrusted(path); err != nil {
		return nil, err
	}
	lock := h.lockPath()
	pins, err := ReadPins(lock)
	if err != nil {
		return nil, err
	}
	pin, ok := pins.Get(kind, name)
	if !ok {
		if h.RequirePinned {
			return nil, fmt.Errorf("not pinned in %s, and pins are required (--require-pinned); check the plugin, then run `lcl plugins pin %s`", lock, name)
		}
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if pin.Path != abs {
		return nil, fmt.Errorf("pinned in %s at %s, but found at %s; check it, then run `lcl plugins pin %s`", lock, pin.Path, abs, name)
	}
	sum, _ := hex.DecodeString(pin.SHA256)
	return &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}, nil
}

// start starts the plugin kind/name and returns its connection and the
// client it dispenses.
func (h *Host) start(kind, name string) (*conn, any, error) {
	where, err := h.Resolve(kind, name)
	if err != nil {
		return nil, nil, err
	}
	label := fmt.Sprintf("%s plugin %q (%s)", kind, name, where)
	cmd, secure, err := h.command(kind, name, where, label)
	if err != nil {
		return nil, nil, err
	}
	// The plugin's socket goes in a folder of its own that kill removes:
	// kill ends the plugin with SIGKILL, so go-plugin's server never removes
	// its socket itself, and every run left one in the temporary folder.
	sockets, err := os.MkdirTemp("", "lcl-plugin-")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: a folder for its socket: %w", label, err)
	}
	// go-plugin names the socket "plugin" and up to 10 random digits.
	if len(sockets)+len("/plugin")+10 < sunPathLen {
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockets)
	} else {
		// A socket path past sun_path cannot be bound: under a long
		// $TMPDIR the plugin puts its socket there itself, as before.
		os.Remove(sockets)
		sockets = ""
	}
	c := h.newConn(label, cmd, secure)
	c.sockets = sockets
	if r := c.launch(cmd, h.startTimeout()); r.err != nil {
		return nil, nil, h.startError(c, r, name, where, secure)
	}
	raw, err := c.rpc.Dispense(kind)
	if err != nil {
		c.kill()
		return nil, nil, fmt.Errorf("%s: %s", label, oneLine(err.Error()))
	}
	if sh, ok := raw.(sharer); ok {
		if c.share, err = os.MkdirTemp(h.matrixDir(), "lcl-plugin-"); err != nil {
			c.kill()
			return nil, nil, fmt.Errorf("%s: a folder for its matrices: %w", label, err)
		}
		sh.Share(shim.Sharing{Dir: c.share, Limit: h.InlineLimit})
	}
	return c, raw, nil
}

// command is the process of the plugin found at where ("built-in": this
// executable serving it), with the SecureConfig of its pin (admit); its
// environment is minimal: plugins get no secrets of the host's.
func (h *Host) command(kind, name, where, label string) (*exec.Cmd, *plugin.SecureConfig, error) {
	var cmd *exec.Cmd
	var secure *plugin.SecureConfig
	if where == "built-in" {
		self := h.Self
		if self == nil {
			exe, err := os.Executable()
			if err != nil {
				return nil, nil, fmt.Errorf("built-in %s %q: finding the lcl executable: %w", kind, name, err)
			}
			self = []string{exe, "plugins", "serve"}
		}
		cmd = exec.Command(self[0], append(slices.Clone(self[1:]), kind, name)...)
	} else {
		var err error
		if secure, err = h.admit(kind, name, where); err != nil {
			return nil, nil, fmt.Errorf("%s: refused: %w", label, err)
		}
		cmd = exec.Command(where)
	}
	cmd.Env = Environment(os.Environ(), h.Env)
	// Its own process group (a terminal's Ctrl-C reaches lcl, which stops
	// it; kill ends its children too) and a parent-death signal (a killed
	// lcl leaves no plugin behind).
	cmd.SysProcAttr = procAttr()
	return cmd, secure, nil
}

// newConn makes the go-plugin client of cmd and registers it with the
// host (Close kills it).
func (h *Host) newConn(label string, cmd *exec.Cmd, secure *plugin.SecureConfig) *conn {
	c := &conn{label: label, stderr: &tail{}, done: make(chan struct{})}
	logw := h.Log
	if logw == nil {
		logw = io.Discard
	}
	c.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  shim.Handshake,
		VersionedPlugins: shim.VersionedPlugins(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     secure,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		StartTimeout:     h.startTimeout(),
		Stderr:           io.MultiWriter(c.stderr, logw),
		GRPCDialOptions:  shim.DialOptions(),
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logw, Level: hclog.Warn}),
	})
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
	return c
}

// started is the outcome of a plugin's start.
type started struct {
	rpc   plugin.ClientProtocol
	err   error
	pid   int
	limit time.Duration // the start's bound
}

// launch starts the plugin's process and waits for its handshake, at most
// limit (and a second); it sets c.pid and, on success, c.rpc.
func (c *conn) launch(cmd *exec.Cmd, limit time.Duration) started {
	// The parent-death signal fires when the thread that started the child
	// ends, and Go ends a thread whose goroutine exits while locked to it
	// (the trainer locks its goroutine): start the plugin from a thread of
	// its own that lives until the plugin is stopped.
	res := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		rpc, err := c.client.Client()
		pid := 0
		if cmd.Process != nil { // started, even when the handshake failed
			pid = cmd.Process.Pid
		}
		res <- started{rpc: rpc, err: err, pid: pid}
		<-c.done
	}()
	// go-plugin's own timer stops waiting for the handshake, but then waits
	// for the plugin's stdout to close, which a child of the plugin may hold
	// for ever: this timer bounds the whole start, and killing the plugin's
	// process group (all it started) releases go-plugin.
	var r started
	select {
	case r = <-res:
	case <-time.After(limit + time.Second):
		r = started{err: errStartTimeout}
	}
	r.limit = limit
	if r.pid > 0 {
		c.pid = r.pid
	} else if rc := c.client.ReattachConfig(); rc != nil {
		c.pid = rc.Pid
	}
	c.rpc = r.rpc
	return r
}

// startError stops a plugin that failed to start (r.err) and says why.
func (h *Host) startError(c *conn, r started, name, where string, secure *plugin.SecureConfig) error {
	err := r.err
	if err == errStartTimeout || strings.Contains(err.Error(), "timeout while waiting for plugin to start") {
		if c.pid > 0 {
			c.kill()
		} else {
			go c.kill() // go-plugin is still starting it: it lets go once it has
		}
		return fmt.Errorf("%s: could not start: no handshake within %s; stopped it and every process it started (if it is only slow to start, raise $LCL_PLUGIN_START_TIMEOUT)%s",
			c.label, r.limit, oneLine(c.stderr.hint()))
	}
	c.kill()
	if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		now, _ := digest.File(where)
		return fmt.Errorf("%s: refused: its SHA-256 %.12s… differs from the one pinned in %s (%.12s…); if you changed it on purpose, check it, then run `lcl plugins pin %s`",
			c.label, now, h.lockPath(), hex.EncodeToString(secure.Checksum), name)
	}
	return fmt.Errorf("%s: could not start: %s", c.label, oneLine(err.Error()+c.stderr.hint()))
}

// sunPathLen is the size of a Unix socket address's path, its terminating
// NUL included: sockaddr_un's sun_path, 108 bytes on Linux and 104 on macOS
// and the BSDs (the smaller, so that the check holds on both).
const sunPathLen = 104

// errStartTimeout is a start that go-plugin did not end in time.
var errStartTimeout = errors.New("start timed out")

// hostEnv are the variables a plugin gets from lcl's environment (besides
// LC_* and those named in $LCL_PLUGIN_ENV): what programs need to find
// their interpreter, libraries, home, locale and temporary folder.
var hostEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"LD_LIBRARY_PATH", "OMP_WAIT_POLICY", "SYSTEMROOT"}

// Environment is the environment of a plugin process: from host (lcl's
// own), only the variables of hostEnv, LC_*, and those named in
// $LCL_PLUGIN_ENV (comma- or space-separated); then extra (Host.Env).
// go-plugin adds its handshake variables. Credentials, tokens and the
// training rendezvous variables of lcl's environment stay out.
func Environment(host, extra []string) []string {
	keep := map[string]bool{}
	for _, k := range hostEnv {
		keep[k] = true
	}
	for _, e := range host {
		if v, ok := strings.CutPrefix(e, "LCL_PLUGIN_ENV="); ok {
			for _, k := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				keep[k] = true
			}
		}
	}
	var env []string
	for _, e := range host {
		k, _, _ := strings.Cut(e, "=")
		if keep[k] || strings.HasPrefix(k, "LC_") {
			env = append(env, e)
		}
	}
	return append(env, extra...)
}

// Error is a failed plugin call. Its message is one line naming the plugin.
type Error struct {
	Plugin string // e.g. strategy plugin "lcl" (built-in)
	Op     string // e.g. Plan(stage 0, epoch 3)
	Msg    string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %s", e.Plugin, e.Op, e.Msg) }

func (e *Error) Unwrap() error { return e.Err }

// ErrInvalid marks an answer the host refused (a malformed plan or matrix).
var ErrInvalid = errors.New("invalid answer from plugin")

// ErrCrashed marks a plugin process that died during a call.
var ErrCrashed = errors.New("plugin crashed")

// call runs f with a timeout and turns failures into an *Error.
func (c *conn) call(ctx context.Context, op string, timeout time.Duration, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := f(cctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller cancelled: not the plugin's fault
	}
	// gRPC can report DeadlineExceeded a moment before the caller's own
	// timer fires: when the caller's deadline came first, it is still theirs.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) && status.Code(err) == codes.DeadlineExceeded {
		if own, _ := cctx.Deadline(); !own.Before(dl) {
			return context.DeadlineExceeded
		}
	}
	e := &Error{Plugin: c.label, Op: op, Err: err}
	st, _ := status.FromError(err)
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) || st.Code() == codes.DeadlineExceeded:
		c.kill()
		e.Msg = fmt.Sprintf("no answer within %s; plugin stopped (if it is only slow, raise $LCL_PLUGIN_TIMEOUT)", timeout)
		e.Err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case c.exited() || st.Code() == codes.Unavailable || st.Code() == codes.Canceled:
		e.Msg = "the plugin process died" + c.stderr.hint()
		e.Err = fmt.Errorf("%w: %w", ErrCrashed, err)
		c.kill()
	default:
		msg := err.Error()
		if s, ok := status.FromError(err); ok {
			msg = s.Message()
		}
		e.Msg = msg
	}
	e.Msg = oneLine(e.Msg)
	return e
}

// exited reports whether the process has gone, giving it a moment to be reaped.
func (c *conn) exited() bool {
	for i := 0; i < 20; i++ {
		if c.client.Exited() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (c *conn) invalid(op, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	return &Error{Plugin: c.label, Op: op, Msg: oneLine(msg), Err: fmt.Errorf("%w: %s", ErrInvalid, msg)}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ⏎ ")), " ")
}

// tail keeps the last few KiB a plugin wrote on stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = t.buf[len(t.buf)-8192:]
	}
	return len(p), nil
}

// hint is "; stderr: <the telling line>" or "": a Go panic line, else the
// last line (a Python exception's message is its last line).
func (t *tail) hint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.buf), "\n") {
		// Skip go-plugin's own JSON log lines ({"@level":...}): not the plugin's words.
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, `{"@`) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return "; stderr: " + l
		}
	}
	return "; stderr: " + lines[len(lines)-1]
}

// Cleanup kills every plugin process any Host of this process started
// (go-plugin's managed clients); lcl calls it once at exit, as a backstop to
// each Host's Close.
func Cleanup() { plugin.CleanupClients() }
