package launch

import (
	"fmt"
	"runtime"
)

// Threads is the libtorch threads of each of nproc workers started on this
// machine: threads when given (> 0), else the CPUs shared out, at least one.
func Threads(threads, nproc int) int {
	if threads > 0 {
		return threads
	}
	return max(1, runtime.NumCPU()/max(nproc, 1))
}

// Primary reports whether this worker reports the run: rank 0 alone prints,
// writes the run directory and records the run.
func (d *Env) Primary() bool { return d.Rank == 0 }

// Threads is this worker's libtorch threads: threads when given (> 0), else
// this machine's CPUs shared among its LOCAL_WORLD_SIZE workers, else 0
// (libtorch's default) when the launcher did not say how many share it.
func (d *Env) Threads(threads int) int {
	if threads > 0 || d.LocalWorld <= 0 {
		return threads
	}
	return Threads(0, d.LocalWorld)
}

// Device is this worker's device: "cuda" becomes its local rank's GPU
// (cuda:LOCAL_RANK); any other device (cpu, cuda:N) is kept.
func (d *Env) Device(device string) string {
	if device == "cuda" {
		return fmt.Sprintf("cuda:%d", d.LocalRank)
	}
	return device
}
