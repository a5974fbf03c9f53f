package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lcl-project/lcl/plugins/internal/shim"
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
	// StartTimeout bounds a plugin's start-up and handshake; 0 = DefaultStartTimeout.
	StartTimeout time.Duration
	// Env is added to every plugin's environment (before the host's own,
	// which wins on a clash, so use names the host does not set).
	Env []string
	// Log receives go-plugin's log and the plugins' stderr; nil discards them
	// (the last lines of a crashed plugin's stderr still reach its error).
	Log io.Writer

	mu      sync.Mutex
	clients []*plugin.Client
}

func (h *Host) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	if d, err := time.ParseDuration(os.Getenv("LCL_PLUGIN_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return DefaultTimeout
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Close kills every plugin this host started.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.clients {
		c.Kill()
	}
	h.clients = nil
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
	return "", fmt.Errorf("unknown %s plugin %q: not built in, and no executable lcl-%s-%s in %s (known: %s)",
		kind, name, kind, name, strings.Join(dirs, ":"), strings.Join(known, ", "))
}

// conn is one running plugin.
type conn struct {
	label  string // e.g. strategy plugin "lcl" (built-in)
	client *plugin.Client
	stderr *tail
}

func (h *Host) start(kind, name string) (*conn, any, error) {
	where, err := h.Resolve(kind, name)
	if err != nil {
		return nil, nil, err
	}
	var cmd *exec.Cmd
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
		cmd = exec.Command(where)
	}
	cmd.Env = append(cmd.Env, h.Env...)
	c := &conn{label: fmt.Sprintf("%s plugin %q (%s)", kind, name, where), stderr: &tail{}}
	logw := h.Log
	if logw == nil {
		logw = io.Discard
	}
	c.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  shim.Handshake,
		VersionedPlugins: shim.VersionedPlugins(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Managed:          true,
		StartTimeout:     orDefault(h.StartTimeout, DefaultStartTimeout),
		Stderr:           io.MultiWriter(c.stderr, logw),
		GRPCDialOptions:  shim.DialOptions(),
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logw, Level: hclog.Warn}),
	})
	h.mu.Lock()
	h.clients = append(h.clients, c.client)
	h.mu.Unlock()
	rpc, err := c.client.Client()
	if err != nil {
		c.client.Kill()
		return nil, nil, fmt.Errorf("%s: could not start: %s", c.label, oneLine(err.Error()+c.stderr.hint()))
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		c.client.Kill()
		return nil, nil, fmt.Errorf("%s: %s", c.label, oneLine(err.Error()))
	}
	return c, raw, nil
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
		c.client.Kill()
		e.Msg = fmt.Sprintf("no answer within %s; plugin stopped (if it is only slow, raise $LCL_PLUGIN_TIMEOUT)", timeout)
		e.Err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case c.exited() || st.Code() == codes.Unavailable || st.Code() == codes.Canceled:
		e.Msg = "the plugin process died" + c.stderr.hint()
		e.Err = fmt.Errorf("%w: %w", ErrCrashed, err)
		c.client.Kill()
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

// pid returns the plugin's process id (tests kill it).
func (c *conn) pid() int {
	if rc := c.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
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
