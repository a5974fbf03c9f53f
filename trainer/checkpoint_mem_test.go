package trainer

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestCheckpointStreamsState: writing a checkpoint or a weights file copies
// the state out of libtorch one tensor at a time into the file, so the Go
// memory it allocates is about one tensor, not a second (or third) copy of
// the state. Measured as Go heap allocations, which the state itself (C++
// memory) does not count in.
func TestCheckpointStreamsState(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Model = "mlp:hidden=512x512x512x512" // 3 × 1 MB weight matrices, momentum as much again
	r, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	peers, err := r.newPeers(0)
	if err != nil {
		t.Fatal(err)
	}
	defer peers.close()
	var state, largest int64
	for _, s := range []stateReader{peers.models[0].State(), peers.optims[0].State()} {
		ns, err := s.Info()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			state += n.NumBytes()
			largest = max(largest, n.NumBytes())
		}
	}
	if state < 6<<20 {
		t.Fatalf("state of %d bytes: too small to tell", state)
	}
	allocated := func(f func() error) int64 {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := f(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc - before.TotalAlloc)
	}
	// One tensor, the file writer's buffer and the header; far below a copy.
	limit := largest + 1<<20
	// Epoch 0 of stage 0: a position no history has to match.
	n := allocated(func() error { return r.saveCheckpoint(peers, position{}, false) })
	t.Logf("state %d bytes (largest tensor %d): the checkpoint allocated %d bytes", state, largest, n)
	if n > limit {
		t.Errorf("checkpoint of %d bytes of state allocated %d bytes, want ≤ %d", state, n, limit)
	}
	if n := allocated(func() error {
		return writeWeights(filepath.Join(cfg.Out, "model.safetensors"), peers.models[0].State(), r.id)
	}); n > limit {
		t.Errorf("weights of %d bytes allocated %d bytes, want ≤ %d", state/2, n, limit)
	}
	// What was written is the state.
	ck, err := r.loadCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	want, err := peers.models[0].State().Copy()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range want {
		if got := ck.tensors["peer0/"+n.Name]; string(got.Data) != string(n.Data) {
			t.Fatalf("checkpoint tensor peer0/%s differs from the model's", n.Name)
		}
	}
}
