package launch

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/torch"
)

const testSecret = "0123456789abcdef0123456789abcdef"

func TestFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want *Env
		err  string
	}{
		{env: map[string]string{}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "1"}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "29500", SecretVar: testSecret},
			want: &Env{Rank: 1, World: 2, Addr: "127.0.0.1", Port: 29500, Secret: testSecret}},
		{env: map[string]string{"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "node0", "MASTER_PORT": "1234", SecretVar: testSecret},
			want: &Env{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4, Addr: "node0", Port: 1234, Secret: testSecret}},
		{env: map[string]string{"WORLD_SIZE": "2", "MASTER_PORT": "29500"}, err: "RANK is not"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "2", "MASTER_PORT": "29500"}, err: "0 ≤ RANK < WORLD_SIZE"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "0"}, err: "MASTER_PORT is not"},
		{env: map[string]string{"WORLD_SIZE": "two", "RANK": "0", "MASTER_PORT": "1"}, err: `WORLD_SIZE="two"`},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "29500"},
			err: "$LCL_DIST_SECRET is not set: every rank of a data-parallel run must carry the same per-run secret of at least 16 characters"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "29500", SecretVar: "short"}, err: "$LCL_DIST_SECRET is too short"},
	} {
		for _, k := range []string{"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", SecretVar} {
			t.Setenv(k, tt.env[k])
		}
		got, err := FromEnv()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil || (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%v: got %+v, %v; want %+v", tt.env, got, err, tt.want)
		}
	}
}

// Where rank 0's store listens: the address MASTER_ADDR or --dist-bind
// names, if it is this machine's; a wildcard only when asked for.
func TestStoreBind(t *testing.T) {
	one := &Env{Rank: 0, World: 2, LocalWorld: 2, Addr: "127.0.0.1"}
	nodes := &Env{Rank: 0, World: 8, LocalWorld: 4, Addr: "127.0.0.1"} // a literal: a name would test the resolver (and /etc/hosts)
	for _, c := range []struct {
		env        *Env
		bind, want string
		err        string
	}{
		{one, "", "127.0.0.1", ""},
		{one, "any", "", ""},
		{one, "127.0.0.1", "127.0.0.1", ""},
		{&Env{World: 2, Addr: "0.0.0.0"}, "", "", "MASTER_ADDR=0.0.0.0 would make the rendezvous store listen on every network interface"},
		{one, "::", "", "--dist-bind :: would make the rendezvous store listen on every network interface"},
		{one, "[::]", "", "every network interface"},
		{one, "192.0.2.7", "", "--dist-bind 192.0.2.7 ([192.0.2.7]) is not an address of this machine"},
		{nodes, "", "", "MASTER_ADDR=127.0.0.1 resolves to 127.0.0.1, a loopback address, but the run spans several machines (WORLD_SIZE=8, LOCAL_WORLD_SIZE=4)"},
	} {
		got, err := c.env.storeBind(c.bind)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v bind %q: %q, %v; want an error with %q", c.env, c.bind, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v bind %q: %q, %v; want %q", c.env, c.bind, got, err, c.want)
		}
	}
}

// Rank 0's store listens on 127.0.0.1 only, and Ctrl-C during the
// rendezvous (its peer never comes) ends Join at once.
func TestJoinBindsAndCancels(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	d := &Env{Rank: 0, World: 2, LocalWorld: 2, Addr: "127.0.0.1", Port: port, Secret: testSecret}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.Join(ctx, JoinOptions{Timeout: time.Minute})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	var listen []string
	for len(listen) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		listen = listeners(t, port)
	}
	if strings.Join(listen, " ") != "127.0.0.1" {
		t.Errorf("the store on port %d listens on %q, want 127.0.0.1 only", port, listen)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "rank 0: rendezvous at 127.0.0.1:") {
			t.Errorf("Join: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Join returned %v after the cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Join ignored the cancel")
	}
}

// listeners are the local addresses of the sockets listening on port
// (/proc/net/tcp and tcp6).
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" { // LISTEN
				continue
			}
			host, p, _ := strings.Cut(fs[1], ":")
			if n, _ := strconv.ParseInt(p, 16, 32); int(n) != port {
				continue
			}
			b, _ := hex.DecodeString(host)
			for i := 0; i+3 < len(b); i += 4 { // each 32-bit word is little-endian
				b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
			}
			out = append(out, net.IP(b).String())
		}
	}
	return out
}

// Rank 0's output passes through; the other ranks' standard error is
// prefixed with their rank and their standard output dropped.
func TestRunPassesOutput(t *testing.T) {
	var out, errb bytes.Buffer
	script := `echo "out $RANK of $WORLD_SIZE worker=$` + WorkerVar + ` omp=$OMP_NUM_THREADS"; echo "err $RANK" >&2`
	if err := Run(context.Background(), Options{Exe: "/bin/sh", Args: []string{"-c", script}, NProc: 2, Threads: 3, Stdout: &out, Stderr: &errb}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "out 0 of 2 worker=1 omp=3\n" {
		t.Errorf("stdout %q", got)
	}
	for _, want := range []string{"err 0\n", "rank 1: err 1\n"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}

// When one worker dies, Run stops the others and its error names the dead
// rank.
func TestRunWorkerDeathNamesRank(t *testing.T) {
	var errb bytes.Buffer
	script := `echo "I am $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT" >&2; if [ "$RANK" = 1 ]; then sleep 0.2; kill -9 $$; fi; exec sleep 60`
	t0 := time.Now()
	err := Run(context.Background(), Options{Exe: "/bin/sh", Args: []string{"-c", script}, NProc: 3, Threads: 1, Stdout: &bytes.Buffer{}, Stderr: &errb})
	if err == nil || !strings.Contains(err.Error(), "worker rank 1 of 3") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("error %v, want one naming rank 1 killed", err)
	}
	if time.Since(t0) > 8*time.Second {
		t.Errorf("the other workers were not stopped promptly (%v)", time.Since(t0))
	}
	if !strings.Contains(errb.String(), "rank 2: I am 2 of 3 at 127.0.0.1:") {
		t.Errorf("stderr of rank 2 not passed through with its prefix:\n%s", errb.String())
	}
}

// A worker that refuses its command line (exit 2) fails the group as a
// usage error, without the advice to resume: nothing was trained.
func TestRunWorkerUsageError(t *testing.T) {
	script := `if [ "$RANK" = 0 ]; then echo "lcl: --fraction 2: want 0 < fraction ≤ 1" >&2; exit 2; fi; exec sleep 60`
	err := Run(context.Background(), Options{Exe: "/bin/sh", Args: []string{"-c", script}, NProc: 2, Threads: 1, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	var ue *UsageError
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "--resume") || !strings.Contains(err.Error(), "worker rank 0 of 2") {
		t.Fatalf("error %v, want a usage error naming rank 0 and no --resume", err)
	}
	// Any other failure still says how to continue.
	err = Run(context.Background(), Options{Exe: "/bin/sh", Args: []string{"-c", "exit 1"}, NProc: 2, Threads: 1, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if errors.As(err, &ue) || err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a worker's failure: %v", err)
	}
}

// Cancelling the context sends every worker SIGINT once; Run returns the
// context's error after they exit.
func TestRunCancelInterruptsWorkers(t *testing.T) {
	errw := &lockedWriter{w: &bytes.Buffer{}}
	stderr := func() string {
		errw.mu.Lock()
		defer errw.mu.Unlock()
		return errw.w.(*bytes.Buffer).String()
	}
	script := `trap 'echo "rank $RANK interrupted" >&2; exit 130' INT; echo ready >&2; while :; do sleep 0.05; done`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for !strings.Contains(stderr(), "rank 1: ready") || !strings.Contains(stderr(), "\nready") && !strings.HasPrefix(stderr(), "ready") {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	err := Run(ctx, Options{Exe: "/bin/sh", Args: []string{"-c", script}, NProc: 2, Threads: 1, Stderr: errw})
	if err != context.Canceled {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	for _, want := range []string{"rank 0 interrupted", "rank 1: rank 1 interrupted"} {
		if !strings.Contains(stderr(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr())
		}
	}
}

// Ranks join only with the same secret: the group's keys are named after
// it, so a process without the run's secret finds none of them. It is
// refused at once (not after the timeout), and the run it tried to join
// goes on: the rank with the right secret joins it afterwards.
func TestSecretSeparatesRuns(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	join := func(rank int, secret string) (*torch.Group, error) {
		d := &Env{Rank: rank, World: 2, LocalWorld: 2, Addr: "127.0.0.1", Port: port, Secret: secret}
		return d.Join(context.Background(), JoinOptions{Timeout: time.Minute})
	}
	rank0 := make(chan error, 1)
	go func() {
		g, err := join(0, testSecret)
		if err == nil {
			err = g.AllReduce([]float64{1})
			g.Close()
		}
		rank0 <- err
	}()
	start := time.Now()
	_, err = join(1, "fedcba9876543210fedcba9876543210")
	const refused = "rank 1: torch: process group: process group rendezvous at 127.0.0.1:"
	if err == nil || !strings.HasPrefix(err.Error(), refused) || !strings.HasSuffix(err.Error(), "rank 0 there carries another $LCL_DIST_SECRET: every rank of a run must carry the same secret") {
		t.Fatalf("another secret: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("another secret was refused after %v", d)
	}
	g, err := join(1, testSecret)
	if err != nil {
		t.Fatalf("the right secret after a wrong one: %v", err)
	}
	v := []float64{2}
	if err := g.AllReduce(v); err != nil || v[0] != 3 {
		t.Errorf("all-reduce: %v, %v", v, err)
	}
	g.Close()
	if err := <-rank0; err != nil {
		t.Errorf("rank 0: %v", err)
	}
}

// The interface Gloo binds is the one whose address routes to rank 0: a
// loopback rank 0 leaves Gloo's own choice (127.0.0.1), and each of this
// machine's own addresses is reached through the interface holding it.
func TestRouteInterface(t *testing.T) {
	if got := routeInterface("127.0.0.1", 29500); got != "" {
		t.Errorf("127.0.0.1: %q, want \"\"", got)
	}
	if got := routeInterface("no-such-host.invalid", 29500); got != "" {
		t.Errorf("an unresolvable name: %q, want \"\"", got)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLoopback() || n.IP.To4() == nil || ifc.Flags&net.FlagUp == 0 {
				continue
			}
			if got := routeInterface(n.IP.String(), 29500); got != ifc.Name {
				t.Errorf("%s (on %s): %q", n.IP, ifc.Name, got)
			}
		}
	}
}

// A rank's stderr reaches the launcher's whole, prefixed per line, however
// long its lines (a 1 MiB limit used to drop the rest of the rank's output).
func TestPrefixLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	var b bytes.Buffer
	prefixLines(&b, strings.NewReader("a\n"+long+"\nb\nno newline"), "rank 1: ")
	if want := "rank 1: a\nrank 1: " + long + "\nrank 1: b\nrank 1: no newline\n"; b.String() != want {
		t.Fatalf("got %d bytes, want %d", b.Len(), len(want))
	}
}
