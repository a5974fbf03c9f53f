package launch

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want *Env
		err  string
	}{
		{env: map[string]string{}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "1"}, want: nil},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "29500"},
			want: &Env{Rank: 1, World: 2, Addr: "127.0.0.1", Port: 29500}},
		{env: map[string]string{"WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "node0", "MASTER_PORT": "1234"},
			want: &Env{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4, Addr: "node0", Port: 1234}},
		{env: map[string]string{"WORLD_SIZE": "2", "MASTER_PORT": "29500"}, err: "RANK is not"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "2", "MASTER_PORT": "29500"}, err: "0 ≤ RANK < WORLD_SIZE"},
		{env: map[string]string{"WORLD_SIZE": "2", "RANK": "0"}, err: "MASTER_PORT is not"},
		{env: map[string]string{"WORLD_SIZE": "two", "RANK": "0", "MASTER_PORT": "1"}, err: `WORLD_SIZE="two"`},
	} {
		for _, k := range []string{"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"} {
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
