//go:build cgo

package shimloss

// The functions are the shim's (trainer/torch's losscheck.h), found by
// torch.LossCheckFuncs and called through these two: this package
// compiles no C++ and links no libtorch of its own.

// #include <stdlib.h>
// #include "../../losscheck.h"
// static int32_t call_loss(void *fn, const float *logits, int64_t n, int64_t c, const int64_t *y,
//                          const int64_t *y_mixed, double lam, const float *targets, const float *weights,
//                          lt_coefs coefs, const float *group_members, const float *group_weights,
//                          int64_t n_groups, const float *teacher_logits, const float *peer_logits,
//                          int32_t n_peers, float *loss_out, float *grad_out, char **err) {
// 	return ((ltt_loss_fn)fn)(logits, n, c, y, y_mixed, lam, targets, weights, coefs, group_members,
// 	                         group_weights, n_groups, teacher_logits, peer_logits, n_peers, loss_out,
// 	                         grad_out, err);
// }
// static int32_t call_cross_entropy(void *fn, const float *logits, int64_t n, int64_t c, const int64_t *y,
//                                   float *loss_out, char **err) {
// 	return ((ltt_cross_entropy_fn)fn)(logits, n, c, y, loss_out, err);
// }
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Input is one model's N×C logits and what the terms of Coefs need.
type Input struct {
	Logits  []float32 // N×C
	N, C    int
	Y       []int64   // N labels
	Targets []float32 // C×C target matrix, nil for one-hot
	Weights []float32 // N per-example weights, nil for uniform
	Coefs   torch.Coefs
	Teacher []float32   // N×C teacher logits, needed when Coefs.KD != 0
	Peers   [][]float32 // N×C logits of each other peer (constants), for Coefs.Mutual
	// The class groups of the group term (Coefs.Group): Groups×C membership
	// and C×Groups weights.
	Groups                     int
	GroupMembers, GroupWeights []float32
	// Mixed, when set (N labels), makes the batch a mixed one: each label
	// term against Lam of Y and 1−Lam of Mixed, as the train step mixes.
	Mixed []int64
	Lam   float64
}

func errOf(op string, cerr *C.char) error {
	if cerr == nil {
		return fmt.Errorf("shimloss: %s failed without a message", op)
	}
	defer C.free(unsafe.Pointer(cerr))
	return fmt.Errorf("shimloss: %s: %s", op, C.GoString(cerr))
}

// ptr is the address of v's data, or nil when v is empty.
func ptr(v []float32) *C.float {
	if len(v) == 0 {
		return nil
	}
	return (*C.float)(&v[0])
}

// Loss is the batch loss of a training step for these logits and its
// gradient with respect to them.
func Loss(in Input) (float32, []float32, error) {
	n, c := in.N, in.C
	if n <= 0 || c <= 0 || len(in.Logits) != n*c || len(in.Y) != n || (in.Weights != nil && len(in.Weights) != n) ||
		(in.Teacher != nil && len(in.Teacher) != n*c) || (in.Targets != nil && len(in.Targets) != c*c) ||
		len(in.GroupMembers) != in.Groups*c || len(in.GroupWeights) != in.Groups*c || (in.Mixed != nil && len(in.Mixed) != n) {
		return 0, nil, fmt.Errorf("shimloss: inconsistent sizes for %d×%d logits", n, c)
	}
	var peers []float32
	for _, p := range in.Peers {
		if len(p) != n*c {
			return 0, nil, fmt.Errorf("shimloss: %d peer logits for %d×%d", len(p), n, c)
		}
		peers = append(peers, p...)
	}
	// lt_coefs is all C floats in the order of Coefs' fields (trainer/torch's
	// TestCoefsMatchHeader), as trainer/torch's cCoefs fills it.
	var co C.lt_coefs
	copy(unsafe.Slice((*float32)(unsafe.Pointer(&co)), unsafe.Sizeof(co)/unsafe.Sizeof(C.float(0))), in.Coefs.Float32s())
	grad := make([]float32, n*c)
	var loss C.float
	var cerr *C.char
	var mixed *C.int64_t
	if in.Mixed != nil {
		mixed = (*C.int64_t)(&in.Mixed[0])
	}
	fn, _, err := torch.LossCheckFuncs()
	if err != nil {
		return 0, nil, fmt.Errorf("shimloss: %w", err)
	}
	rc := C.call_loss(fn, ptr(in.Logits), C.int64_t(n), C.int64_t(c), (*C.int64_t)(&in.Y[0]), mixed, C.double(in.Lam),
		ptr(in.Targets), ptr(in.Weights),
		co, ptr(in.GroupMembers), ptr(in.GroupWeights), C.int64_t(in.Groups), ptr(in.Teacher), ptr(peers), C.int32_t(len(in.Peers)),
		&loss, ptr(grad), &cerr)
	runtime.KeepAlive(in)
	runtime.KeepAlive(peers)
	if rc != 0 {
		return 0, nil, errOf("loss", cerr)
	}
	return float32(loss), grad, nil
}

// CrossEntropy is torch.nn.functional.cross_entropy (mean over the batch):
// the reference the one-hot loss is checked against.
func CrossEntropy(logits []float32, n, c int, y []int64) (float32, error) {
	if n <= 0 || len(logits) != n*c || len(y) != n {
		return 0, fmt.Errorf("shimloss: cross entropy: inconsistent sizes for %d×%d logits", n, c)
	}
	_, fn, err := torch.LossCheckFuncs()
	if err != nil {
		return 0, fmt.Errorf("shimloss: %w", err)
	}
	var loss C.float
	var cerr *C.char
	rc := C.call_cross_entropy(fn, ptr(logits), C.int64_t(n), C.int64_t(c), (*C.int64_t)(&y[0]), &loss, &cerr)
	runtime.KeepAlive(logits)
	runtime.KeepAlive(y)
	if rc != 0 {
		return 0, errOf("cross entropy", cerr)
	}
	return float32(loss), nil
}
