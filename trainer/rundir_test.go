package trainer

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/torch"
)

func TestDefaultRunDir(t *testing.T) {
	for _, c := range []struct {
		kind, model, strategy string
		seed                  int64
		want                  string
	}{
		{"fashion-mnist", "cnn", "sl", 1, "runs/fashion-mnist-cnn-sl-s1"},
		{"cifar100", "resnet18:stem=cifar", "lcl", 3, "runs/cifar100-resnet18_stem=cifar-lcl-s3"},
		{"synthetic", "torchscript:a:b.pt", "kd", 0, "runs/synthetic-torchscript_a_b.pt-kd-s0"},
	} {
		if got := DefaultRunDir(c.kind, c.model, c.strategy, c.seed); got != filepath.FromSlash(c.want) {
			t.Errorf("DefaultRunDir(%q, %q, %q, %d) = %q, want %q", c.kind, c.model, c.strategy, c.seed, got, c.want)
		}
	}
}

func TestCheckRunDir(t *testing.T) {
	empty, used := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(used, checkpointName), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir              string
		resume, primary  bool
		wantCkpt, exists bool
	}{
		{empty, false, true, false, false},
		{empty, true, true, false, false},
		{filepath.Join(empty, "new"), false, true, false, false},
		{used, true, true, true, false},
		{used, false, true, true, true},   // would overwrite the run
		{used, false, false, true, false}, // not rank 0: rank 0 decides
	} {
		ckpt, err := CheckRunDir(c.dir, c.resume, c.primary)
		var re *RunExistsError
		if ckpt != c.wantCkpt || errors.As(err, &re) != c.exists || (err != nil && !c.exists) {
			t.Errorf("CheckRunDir(%s, resume %v, primary %v) = %v, %v; want %v, exists error %v", c.dir, c.resume, c.primary, ckpt, err, c.wantCkpt, c.exists)
		}
		if c.exists && (re.Dir != c.dir || err.Error() != c.dir+" holds a run already: continue it with --resume or choose another --out") {
			t.Errorf("error %q", err)
		}
	}
}

// Every rank resumes as rank 0's run directory says, whatever its own holds.
func TestAgreeCheckpoint(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Fatal(err)
	}
	for _, rank0 := range []bool{true, false} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		got := make([]bool, 3)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Go(func() {
				g, err := torch.NewGroup(torch.GroupConfig{Addr: "127.0.0.1", Port: port, Rank: r, Size: 3, Timeout: time.Minute})
				if err != nil {
					errs[r] = err
					return
				}
				defer g.Close()
				own := rank0
				if r > 0 {
					own = !rank0 // the other ranks' folders disagree
				}
				got[r], errs[r] = AgreeCheckpoint(g, own)
			})
		}
		wg.Wait()
		for r := range 3 {
			if errs[r] != nil || got[r] != rank0 {
				t.Errorf("rank 0 has a checkpoint: %v; rank %d agreed on %v, %v", rank0, r, got[r], errs[r])
			}
		}
	}
}
