//go:build cgo

package torch

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"
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
	agent := C.int32_t(0)
	if gc.AgentStore {
		agent = 1
	}
	var cerr *C.char
	p := C.lt_pg_new(be, addr, C.int32_t(gc.Port), C.int32_t(gc.Rank), C.int32_t(gc.Size),
		C.int64_t(gc.Timeout.Milliseconds()), ifc, agent, pre, bind, &cerr)
	if p == nil {
		return nil, errOf("process group", cerr)
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
	var cerr *C.char
	if C.lt_pg_abort(p, w, &cerr) != 0 {
		// Only an allocation failure; the group is then not aborted and
		// its collectives still end at the timeout.
		_ = errOf("abort", cerr)
	}
}

// BroadcastModel overwrites m's parameters and buffers (only its buffers when
// buffersOnly) with rank 0's.
func (g *Group) BroadcastModel(m *Model, buffersOnly bool) error {
	const op = "broadcast model"
	mc, err := m.handle(op)
	if err != nil {
		return err
	}
	gc, err := g.acquire(op)
	if err != nil {
		return err
	}
	defer g.release()
	var cerr *C.char
	b := C.int32_t(0)
	if buffersOnly {
		b = 1
	}
	rc := C.lt_pg_broadcast_model(gc, mc, b, &cerr)
	runtime.KeepAlive(g)
	runtime.KeepAlive(m)
	if rc != 0 {
		return errOf(op, cerr)
	}
	return nil
}

// BroadcastOptimizer overwrites o's momentum buffers with rank 0's.
func (g *Group) BroadcastOptimizer(o *Optimizer) error {
	const op = "broadcast optimizer"
	oc, err := o.handle(op)
	if err != nil {
		return err
	}
	gc, err := g.acquire(op)
	if err != nil {
		return err
	}
	defer g.release()
	var cerr *C.char
	rc := C.lt_pg_broadcast_optim(gc, oc, &cerr)
	runtime.KeepAlive(g)
	runtime.KeepAlive(o)
	if rc != 0 {
		return errOf(op, cerr)
	}
	return nil
}

// AllReduce replaces v by its element-wise sum over the ranks.
func (g *Group) AllReduce(v []float64) error {
	gc, err := g.acquire("all-reduce")
	if err != nil {
		return err
	}
	defer g.release()
	if len(v) == 0 {
		return nil
	}
	var cerr *C.char
	rc := C.lt_pg_allreduce_f64(gc, (*C.double)(&v[0]), C.int64_t(len(v)), &cerr)
	runtime.KeepAlive(g)
	if rc != 0 {
		return errOf("all-reduce", cerr)
	}
	return nil
}

// Broadcast returns rank 0's b on every rank (b is ignored elsewhere).
func (g *Group) Broadcast(b []byte) ([]byte, error) {
	gc, err := g.acquire("broadcast")
	if err != nil {
		return nil, err
	}
	defer g.release()
	var n [8]byte
	if g.rank == 0 {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	}
	if err := broadcastBytes(gc, n[:]); err != nil {
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
	if err := broadcastBytes(gc, out); err != nil {
		return nil, err
	}
	return out, nil
}

// broadcastBytes broadcasts b over the group gc, which the caller holds (acquire).
func broadcastBytes(gc *C.lt_pg, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var cerr *C.char
	rc := C.lt_pg_broadcast_bytes(gc, unsafe.Pointer(&b[0]), C.int64_t(len(b)), &cerr)
	if rc != 0 {
		return errOf("broadcast", cerr)
	}
	return nil
}
