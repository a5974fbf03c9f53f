//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
)

// NewGroup joins the group: rank 0 hosts the rendezvous store at Addr:Port,
// the call returns once every rank has joined (or fails after Timeout).
func NewGroup(gc GroupConfig) (*Group, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	be, free1 := cstr(gc.Backend)
	defer free1()
	addr, free2 := cstr(gc.Addr)
	defer free2()
	ifc, free3 := cstr(gc.Interface)
	defer free3()
	pre, free4 := cstr(gc.Prefix)
	defer free4()
	bind, free5 := cstr(gc.Bind)
	defer free5()
	p, err := create("process group", func(e **C.char) *C.lt_pg {
		return C.lt_pg_new(be, addr, C.int32_t(gc.Port), C.int32_t(gc.Rank), C.int32_t(gc.Size),
			C.int64_t(gc.Timeout.Milliseconds()), ifc, cbool(gc.AgentStore), pre, bind, e)
	})
	if err != nil {
		return nil, err
	}
	g := &Group{c: p, rank: gc.Rank, size: gc.Size}
	g.idle.L = &g.mu
	g.cleanup = runtime.AddCleanup(g, func(p *C.lt_pg) { C.lt_pg_free(p) }, p)
	return g, nil
}

// acquire returns the C handle for a call that uses it until release; an
// error once the group is closed. Close waits for every such call.
func (g *Group) acquire(op string) (*C.lt_pg, error) {
	if g == nil {
		return nil, closedErr(op, "process group")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c == nil {
		return nil, closedErr(op, "process group")
	}
	g.users++
	return g.c, nil
}

func (g *Group) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.users--; g.users == 0 {
		g.idle.Broadcast()
	}
}

// Close leaves the group; it is idempotent. A collective still in progress
// on another goroutine is aborted, and Close returns once it has returned
// (so the C memory is freed when nothing uses it any more).
func (g *Group) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	p := g.c
	if p == nil {
		g.mu.Unlock()
		return
	}
	g.c = nil // later calls fail, Abort does nothing
	if g.users > 0 {
		abort(p, "process group closed")
	}
	for g.users > 0 {
		g.idle.Wait()
	}
	g.mu.Unlock()
	g.cleanup.Stop()
	C.lt_pg_free(p)
}

// Abort makes the collective in progress, and every later one, fail with
// why; the group is unusable afterwards. It is safe to call from any
// goroutine at any time (e.g. from context.AfterFunc when a context is
// canceled), also concurrently with or after Close, when it does nothing.
func (g *Group) Abort(why string) {
	if g == nil {
		return
	}
	// Holding mu keeps Close from freeing the group during the call;
	// lt_pg_abort only sets a flag, so this never waits for a collective.
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c != nil {
		abort(g.c, why)
	}
}

func abort(p *C.lt_pg, why string) {
	w, free := cstr(why)
	defer free()
	// Only an allocation failure can fail it; the group is then not
	// aborted and its collectives still end at the timeout.
	_ = call("abort", func(e **C.char) C.int32_t { return C.lt_pg_abort(p, w, e) })
}

// collective runs f, a call of shim.h's process-group section, on the
// group's handle, which it holds (acquire) until f returns.
func (g *Group) collective(op string, f func(gc *C.lt_pg, err **C.char) C.int32_t, keep ...any) error {
	gc, err := g.acquire(op)
	if err != nil {
		return err
	}
	defer g.release()
	return call(op, func(e **C.char) C.int32_t { return f(gc, e) }, keep...)
}

// BroadcastModel overwrites m's parameters and buffers (only its buffers when
// buffersOnly) with rank 0's.
func (g *Group) BroadcastModel(m *Model, buffersOnly bool) error {
	const op = "broadcast model"
	mc, err := m.handle(op)
	if err != nil {
		return err
	}
	return g.collective(op, func(gc *C.lt_pg, e **C.char) C.int32_t {
		return C.lt_pg_broadcast_model(gc, mc, cbool(buffersOnly), e)
	}, m)
}

// BroadcastOptimizer overwrites o's state (its State on o's device) with
// rank 0's.
func (g *Group) BroadcastOptimizer(o *Optimizer) error {
	const op = "broadcast optimizer"
	oc, err := o.handle(op)
	if err != nil {
		return err
	}
	return g.collective(op, func(gc *C.lt_pg, e **C.char) C.int32_t { return C.lt_pg_broadcast_optim(gc, oc, e) }, o)
}

// AllReduce replaces v by its element-wise sum over the ranks.
func (g *Group) AllReduce(v []float64) error {
	return g.collective("all-reduce", func(gc *C.lt_pg, e **C.char) C.int32_t {
		if len(v) == 0 {
			return 0
		}
		return C.lt_pg_allreduce_f64(gc, (*C.double)(&v[0]), C.int64_t(len(v)), e)
	}, v)
}

// Broadcast returns rank 0's b on every rank (b is ignored elsewhere): its
// size first, then its bytes.
func (g *Group) Broadcast(b []byte) ([]byte, error) {
	bcast := func(buf []byte) error {
		return g.collective("broadcast", func(gc *C.lt_pg, e **C.char) C.int32_t {
			return C.lt_pg_broadcast_bytes(gc, bytesPtr(buf), C.int64_t(len(buf)), e)
		}, buf)
	}
	var n [8]byte
	if g.rank == 0 {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	}
	if err := bcast(n[:]); err != nil {
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
	if err := bcast(out); err != nil {
		return nil, err
	}
	return out, nil
}
