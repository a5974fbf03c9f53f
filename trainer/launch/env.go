// Package launch starts and joins data-parallel training processes: the
// torchrun environment contract a worker reads (RANK, WORLD_SIZE,
// MASTER_ADDR, ...), joining its process group, and the local launcher
// behind `lcl train --nproc N` that starts N workers and supervises them (a
// dead worker stops the others and is named; Ctrl-C reaches every worker
// once; nothing a worker started outlives it).
package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Env is the torchrun environment contract of one worker process.
type Env struct {
	Rank, World, LocalRank, LocalWorld int
	Addr                               string
	Port                               int
}

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
	return d, nil
}

// Join joins this worker's process group over backend (gloo, nccl); a
// rank waits up to timeout for a stalled peer.
func (d *Env) Join(backend string, timeout time.Duration) (*torch.Group, error) {
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
