//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// Group is a c10d process group: the processes (ranks) of one data-parallel
// run. Every rank must make the same calls on its Group in the same order; a
// Group is not safe for concurrent use.
type Group struct {
	c          *C.lt_pg
	rank, size int
	cleanup    runtime.Cleanup
}

// GroupConfig says how to join a process group.
type GroupConfig struct {
	Backend string // "gloo" (default) or "nccl" (CUDA builds only)
	Addr    string // rank 0's address (MASTER_ADDR)
	Port    int    // rank 0's TCPStore port (MASTER_PORT)
	Rank    int
	Size    int
	// Timeout bounds the rendezvous and every collective: a stalled peer
	// makes the others fail after it (a peer that exited fails them at once).
	Timeout time.Duration
	// Interface is the network interface Gloo binds ("": 127.0.0.1 for a
	// loopback Addr, else the address of this host's name).
	Interface string
	// AgentStore says the launcher already hosts the store at Addr:Port
	// (torchrun sets TORCHELASTIC_USE_AGENT_STORE=True): rank 0 connects to
	// it instead of hosting one.
	AgentStore bool
	// Prefix namespaces the group's keys in the store ("" = "lcl").
	Prefix string
}

// NewGroup joins the group: rank 0 hosts the rendezvous store at Addr:Port,
// the call returns once every rank has joined (or fails after Timeout).
func NewGroup(gc GroupConfig) (*Group, error) {
	be, free1 := cstr(gc.Backend)
	defer free1()
	addr, free2 := cstr(gc.Addr)
	defer free2()
	ifc, free3 := cstr(gc.Interface)
	defer free3()
	pre, free4 := cstr(gc.Prefix)
	defer free4()
	agent := C.int32_t(0)
	if gc.AgentStore {
		agent = 1
	}
	var cerr *C.char
	p := C.lt_pg_new(be, addr, C.int32_t(gc.Port), C.int32_t(gc.Rank), C.int32_t(gc.Size),
		C.int64_t(gc.Timeout.Milliseconds()), ifc, agent, pre, &cerr)
	if p == nil {
		return nil, errOf("process group", cerr)
	}
	g := &Group{c: p, rank: gc.Rank, size: gc.Size}
	g.cleanup = runtime.AddCleanup(g, func(p *C.lt_pg) { C.lt_pg_free(p) }, p)
	return g, nil
}

// Rank is this process's rank, 0 ≤ Rank < Size.
func (g *Group) Rank() int { return g.rank }

// Size is the number of ranks.
func (g *Group) Size() int { return g.size }

// Close leaves the group.
func (g *Group) Close() {
	if g == nil || g.c == nil {
		return
	}
	g.cleanup.Stop()
	C.lt_pg_free(g.c)
	g.c = nil
}

// Abort makes the collective in progress, and every later one, fail with
// why. It is safe to call from any goroutine (e.g. when a context is
// canceled); the group is unusable afterwards.
func (g *Group) Abort(why string) {
	w, free := cstr(why)
	defer free()
	C.lt_pg_abort(g.c, w)
	runtime.KeepAlive(g)
}

// BroadcastModel overwrites m's parameters and buffers (only its buffers when
// buffersOnly) with rank 0's.
func (g *Group) BroadcastModel(m *Model, buffersOnly bool) error {
	var cerr *C.char
	b := C.int32_t(0)
	if buffersOnly {
		b = 1
	}
	rc := C.lt_pg_broadcast_model(g.c, m.c, b, &cerr)
	runtime.KeepAlive(g)
	runtime.KeepAlive(m)
	if rc != 0 {
		return errOf("broadcast model", cerr)
	}
	return nil
}

// BroadcastOptimizer overwrites o's momentum buffers with rank 0's.
func (g *Group) BroadcastOptimizer(o *Optimizer) error {
	var cerr *C.char
	rc := C.lt_pg_broadcast_optim(g.c, o.c, &cerr)
	runtime.KeepAlive(g)
	runtime.KeepAlive(o)
	if rc != 0 {
		return errOf("broadcast optimizer", cerr)
	}
	return nil
}

// AllReduce replaces v by its element-wise sum over the ranks.
func (g *Group) AllReduce(v []float64) error {
	if len(v) == 0 {
		return nil
	}
	var cerr *C.char
	rc := C.lt_pg_allreduce_f64(g.c, (*C.double)(&v[0]), C.int64_t(len(v)), &cerr)
	runtime.KeepAlive(g)
	if rc != 0 {
		return errOf("all-reduce", cerr)
	}
	return nil
}

// Broadcast returns rank 0's b on every rank (b is ignored elsewhere).
func (g *Group) Broadcast(b []byte) ([]byte, error) {
	var n [8]byte
	if g.rank == 0 {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	}
	if err := g.bytes(n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > 1<<34 {
		return nil, fmt.Errorf("torch: broadcast: %d bytes announced", size)
	}
	out := make([]byte, size)
	if g.rank == 0 {
		copy(out, b)
	}
	if err := g.bytes(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (g *Group) bytes(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var cerr *C.char
	rc := C.lt_pg_broadcast_bytes(g.c, unsafe.Pointer(&b[0]), C.int64_t(len(b)), &cerr)
	runtime.KeepAlive(g)
	if rc != 0 {
		return errOf("broadcast", cerr)
	}
	return nil
}
