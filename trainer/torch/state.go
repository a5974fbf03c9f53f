//go:build cgo

package torch

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// The state section of shim.h (state.hpp): one table interface for the
// state of models and of optimizers.

func (m *Model) stateTable(op string) (*C.lt_state, error) {
	c, err := m.handle(op)
	if err != nil {
		return nil, err
	}
	return C.lt_model_state(c), nil
}

func (o *Optimizer) stateTable(op string) (*C.lt_state, error) {
	c, err := o.handle(op)
	if err != nil {
		return nil, err
	}
	return C.lt_optim_state(c), nil
}

// with runs f on the owner's state table, keeping the owner alive (its
// cleanup cannot free the table) until f returns.
func (s *State) with(f func(c *C.lt_state) error) error {
	c, err := s.owner.stateTable(s.op)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(s.owner)
	return f(c)
}

// Info lists the tensors, with their names, types and shapes but without
// their data (Data is nil): with Read a caller streams the state one
// tensor at a time.
func (s *State) Info() (ns []Named, err error) {
	err = s.with(func(c *C.lt_state) error {
		ns, err = s.info(c)
		return err
	})
	return ns, err
}

// Read copies tensor i of Info into dst, which must hold exactly its bytes.
func (s *State) Read(i int, dst []byte) error {
	return s.with(func(c *C.lt_state) error { return s.read(c, i, dst) })
}

// Copy copies every tensor out of libtorch.
func (s *State) Copy() (ns []Named, err error) {
	err = s.with(func(c *C.lt_state) error {
		if ns, err = s.info(c); err != nil {
			return err
		}
		for i := range ns {
			ns[i].Data = make([]byte, ns[i].NumBytes())
			if err := s.read(c, i, ns[i].Data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// Load overwrites every tensor with the one of the same name in state; the
// names, types and shapes must match exactly.
func (s *State) Load(state map[string]Named) error {
	return s.with(func(c *C.lt_state) error {
		want, err := s.info(c)
		if err != nil {
			return err
		}
		if err := checkStateMatch(want, state, s.op); err != nil {
			return err
		}
		for i, w := range want {
			h := state[w.Name]
			if int64(len(h.Data)) != w.NumBytes() {
				return fmt.Errorf("%s: tensor %q has %d bytes, want %d", s.op, w.Name, len(h.Data), w.NumBytes())
			}
			err := call(s.op, func(e **C.char) C.int32_t {
				return C.lt_state_write(c, C.int32_t(i), bytesPtr(h.Data), C.int64_t(len(h.Data)), e)
			}, h.Data)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// info lists the tensors of table c without their data.
func (s *State) info(c *C.lt_state) ([]Named, error) {
	var count C.int32_t
	if err := call(s.op, func(e **C.char) C.int32_t { return C.lt_state_count(c, &count, e) }); err != nil {
		return nil, err
	}
	out := make([]Named, 0, int(count))
	for i := range int(count) {
		var (
			name  *C.char
			dt    C.int32_t
			shape [8]C.int64_t
			nd    C.int32_t
			nb    C.int64_t
		)
		err := call(s.op, func(e **C.char) C.int32_t {
			return C.lt_state_info(c, C.int32_t(i), &name, &dt, &shape[0], &nd, &nb, e)
		})
		if err != nil {
			return nil, err
		}
		n := Named{Name: C.GoString(name), DType: DType(dt), Shape: make([]int64, int(nd))}
		for d := range n.Shape {
			n.Shape[d] = int64(shape[d])
		}
		if n.NumBytes() != int64(nb) {
			return nil, fmt.Errorf("torch: %s: tensor %q: %d bytes for %v%v", s.op, n.Name, int64(nb), n.DType, n.Shape)
		}
		out = append(out, n)
	}
	return out, nil
}

// read copies tensor i of table c into dst.
func (s *State) read(c *C.lt_state, i int, dst []byte) error {
	return call(s.op, func(e **C.char) C.int32_t {
		return C.lt_state_read(c, C.int32_t(i), bytesPtr(dst), C.int64_t(len(dst)), e)
	}, dst)
}

// bytesPtr is the address of b's data, or nil when b is empty.
func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
