package launch

import (
	"runtime"
	"testing"
)

// What a worker takes from its environment: its threads, its GPU and
// whether it reports.
func TestWorkerSettings(t *testing.T) {
	cpus := runtime.NumCPU()
	for _, c := range []struct {
		env         Env
		threads     int
		device      string
		wantThreads int
		wantDevice  string
		wantPrimary bool
	}{
		{Env{Rank: 0, World: 2, LocalRank: 0, LocalWorld: 2}, 3, "cpu", 3, "cpu", true},
		{Env{Rank: 1, World: 2, LocalRank: 1, LocalWorld: 2}, 0, "cuda", max(1, cpus/2), "cuda:1", false},
		{Env{Rank: 5, World: 8, LocalRank: 1, LocalWorld: 4 * cpus}, 0, "cuda:3", 1, "cuda:3", false}, // more workers than CPUs
		{Env{Rank: 3, World: 4, LocalRank: 3}, 0, "cuda", 0, "cuda:3", false},                         // LOCAL_WORLD_SIZE unknown: libtorch's default
	} {
		e := c.env
		if got := e.Threads(c.threads); got != c.wantThreads {
			t.Errorf("%+v.Threads(%d) = %d, want %d", e, c.threads, got, c.wantThreads)
		}
		if got := e.Device(c.device); got != c.wantDevice {
			t.Errorf("%+v.Device(%q) = %q, want %q", e, c.device, got, c.wantDevice)
		}
		if e.Primary() != c.wantPrimary {
			t.Errorf("%+v.Primary() = %v", e, e.Primary())
		}
	}
	for _, c := range []struct{ threads, nproc, want int }{
		{2, 4, 2}, {0, 1, cpus}, {0, 2, max(1, cpus/2)}, {0, 4 * cpus, 1}, {0, 0, cpus},
	} {
		if got := Threads(c.threads, c.nproc); got != c.want {
			t.Errorf("Threads(%d, %d) = %d, want %d", c.threads, c.nproc, got, c.want)
		}
	}
}

func TestRoleOf(t *testing.T) {
	rank := &Env{Rank: 1, World: 4}
	for _, c := range []struct {
		env      *Env
		nproc    int
		launched bool
		want     Role
		err      string
	}{
		{nil, 1, false, Single, ""},
		{nil, 4, false, Launcher, ""},
		{rank, 1, false, Worker, ""},
		{rank, 1, true, Worker, ""},
		{rank, 4, true, Worker, ""}, // a worker Run started (it drops --nproc, but a worker never relaunches)
		{rank, 4, false, 0, "--nproc 4: this process was started by a launcher (WORLD_SIZE=4): drop --nproc"},
		{nil, 0, false, 0, "--nproc 0: want ≥ 1"},
		{rank, -1, false, 0, "--nproc -1: want ≥ 1"},
	} {
		got, err := RoleOf(c.env, c.nproc, c.launched)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("RoleOf(%v, %d, %v): %v, want %q", c.env, c.nproc, c.launched, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("RoleOf(%v, %d, %v) = %v, %v; want %v", c.env, c.nproc, c.launched, got, err, c.want)
		}
	}
}
