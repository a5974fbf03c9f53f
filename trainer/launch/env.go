// Package launch starts and joins data-parallel training processes: the
// torchrun environment contract a worker reads (RANK, WORLD_SIZE,
// MASTER_ADDR, ...), joining its process group, and the local launcher
// behind `lcl train --nproc N` that starts N workers and supervises them (a
// dead worker stops the others and is named; Ctrl-C reaches every worker
// once; nothing a worker started outlives it).
package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/trainer/torch"
)

// Env is the torchrun environment contract of one worker process, plus the
// run's secret.
type Env struct {
	Rank, World, LocalRank, LocalWorld int
	Addr                               string
	Port                               int
	// Secret is the per-run secret every rank carries ($LCL_DIST_SECRET).
	// The group's keys in the rendezvous store are named after it: a process
	// without it finds none of them, so it can neither join the run nor read,
	// change or delete its keys (heartbeats, addresses).
	Secret string
}

// SecretVar holds the per-run secret of a data-parallel run. The --nproc
// launcher makes one; under torchrun, Slurm or Kubernetes the user sets the
// same value on every rank.
const SecretVar = "LCL_DIST_SECRET"

// MinSecret is the shortest secret accepted.
const MinSecret = 16

// WorkerVar marks the workers started by Run, so that they do not launch
// again.
const WorkerVar = "LCL_NPROC_WORKER"

// Launched reports whether this process is a worker started by Run.
func Launched() bool { return os.Getenv(WorkerVar) != "" }

// FromEnv reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
// and MASTER_PORT; it returns nil when WORLD_SIZE is unset or 1.
func FromEnv() (*Env, error) {
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
	d := &Env{Addr: os.Getenv("MASTER_ADDR")}
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
	d.Secret = os.Getenv(SecretVar)
	if len(d.Secret) < MinSecret {
		return nil, fmt.Errorf("$%s is %s: every rank of a data-parallel run must carry the same per-run secret of at least %d characters, e.g. export %s=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n') before torchrun or srun (lcl train --nproc makes its own; docs/experiment.md)",
			SecretVar, map[bool]string{true: "not set", false: "too short"}[d.Secret == ""], MinSecret, SecretVar)
	}
	return d, nil
}

// JoinOptions say how a worker joins its group.
type JoinOptions struct {
	Backend string        // gloo (default), nccl
	Timeout time.Duration // how long a rank waits for a stalled peer
	// Bind is the address rank 0's rendezvous store listens on: "" means
	// MASTER_ADDR (which must then be an address of rank 0's machine), a
	// host name or IP address names another, and "any" every interface. A
	// wildcard address (0.0.0.0, ::) is refused: say "any" to mean it.
	Bind string
}

// Join joins this worker's process group. It returns as soon as ctx ends
// (Ctrl-C, SIGTERM), even in the middle of the rendezvous.
func (d *Env) Join(ctx context.Context, o JoinOptions) (*torch.Group, error) {
	agent := strings.EqualFold(os.Getenv("TORCHELASTIC_USE_AGENT_STORE"), "true")
	bind := ""
	if d.Rank == 0 && !agent {
		var err error
		if bind, err = d.storeBind(o.Bind); err != nil {
			return nil, fmt.Errorf("rank 0: %w", err)
		}
	}
	// The keys are named after the secret; under torchrun each restart of
	// the group also gets fresh keys (the agent's store lives on). Rank 0
	// marks the run in the key next to them (lcl[/attempt_N]/rank0), so that
	// a rank with another secret is refused at once (dist.cpp).
	prefix := "lcl"
	if n := os.Getenv("TORCHELASTIC_RESTART_COUNT"); n != "" {
		prefix += "/attempt_" + n
	}
	prefix += "/" + secretTag(d.Secret)
	ifc := os.Getenv("GLOO_SOCKET_IFNAME")
	if ifc == "" {
		ifc = routeInterface(d.Addr, d.Port)
	}
	cfg := torch.GroupConfig{Backend: o.Backend, Addr: d.Addr, Port: d.Port, Rank: d.Rank,
		Size: d.World, Timeout: o.Timeout, Interface: ifc,
		AgentStore: agent, Prefix: prefix, Bind: bind}
	type joined struct {
		g   *torch.Group
		err error
	}
	done := make(chan joined, 1)
	go func() {
		defer crash.Handle()
		g, err := torch.NewGroup(cfg)
		done <- joined{g, err}
	}()
	select {
	case j := <-done:
		if j.err != nil {
			return nil, fmt.Errorf("rank %d: %w", d.Rank, j.err)
		}
		return j.g, nil
	case <-ctx.Done():
		// The rendezvous blocks in libtorch until its peers come or it
		// times out; the caller is leaving now (the process exits), and a
		// group that forms meanwhile is closed.
		go func() {
			if j := <-done; j.g != nil {
				j.g.Close()
			}
		}()
		return nil, fmt.Errorf("rank %d: rendezvous at %s:%d: %w", d.Rank, d.Addr, d.Port, ctx.Err())
	}
}

// secretTag names a run's keys: a digest of its secret.
func secretTag(secret string) string {
	sum := sha256.Sum256([]byte("lcl rendezvous\x00" + secret))
	return hex.EncodeToString(sum[:16])
}

// storeBind decides the IP address rank 0's store listens on ("" = every
// interface, only when asked for with "any").
func (d *Env) storeBind(bind string) (string, error) {
	host, from := bind, "--dist-bind "+bind
	switch {
	case strings.EqualFold(bind, "any"):
		return "", nil
	case bind == "":
		host, from = d.Addr, "MASTER_ADDR="+d.Addr
	}
	h := strings.Trim(host, "[]")
	if ip := net.ParseIP(h); h == "*" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("%s would make the rendezvous store listen on every network interface: name this machine's address on the network the peers use (MASTER_ADDR or --dist-bind ADDR), or say --dist-bind any to listen on all of them", from)
	}
	ips, err := net.LookupIP(h)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	local := localAddrs()
	for _, ip := range ips {
		if !ip.IsLoopback() && !local[ip.String()] {
			continue
		}
		if ip.IsLoopback() && d.LocalWorld > 0 && d.World > d.LocalWorld {
			return "", fmt.Errorf("%s resolves to %s, a loopback address, but the run spans several machines (WORLD_SIZE=%d, LOCAL_WORLD_SIZE=%d): the other machines could not reach the store; set MASTER_ADDR to this machine's network address, or --dist-bind ADDR",
				from, ip, d.World, d.LocalWorld)
		}
		return ip.String(), nil
	}
	return "", fmt.Errorf("%s (%v) is not an address of this machine: rank 0 hosts the rendezvous store and runs where MASTER_ADDR points; name this machine's address with --dist-bind (in Kubernetes, the pod IP)", from, ips)
}

// routeInterface is the network interface whose address this machine uses
// to reach addr:port (rank 0), which Gloo then binds: the peers reach this
// rank on the network they reach rank 0 on. Gloo's own default, the
// address of the host's name, is often a loopback address (Debian maps the
// host name to 127.0.1.1) or one of another network (a container's or
// network namespace's host name). "" (Gloo's default) when addr is a
// loopback address, does not resolve, or no interface holds the address.
func routeInterface(addr string, port int) string {
	ips, err := net.LookupIP(strings.Trim(addr, "[]"))
	if err != nil || len(ips) == 0 || ips[0].IsLoopback() {
		return ""
	}
	// A UDP "connection" only asks the kernel for the route: nothing is sent.
	c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: ips[0], Port: port})
	if err != nil {
		return ""
	}
	local := c.LocalAddr().(*net.UDPAddr).IP
	c.Close()
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(local) {
				return ifc.Name
			}
		}
	}
	return ""
}

// localAddrs are the IP addresses of this machine's interfaces.
func localAddrs() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out[n.IP.String()] = true
		}
	}
	return out
}
