package launch

import (
	"fmt"
	"runtime"
)

// Role is what a training process does in its run.
type Role int

const (
	Single   Role = iota // the whole run, in this process
	Launcher             // starts nproc workers on this machine and supervises them (Run)
	Worker               // one rank of a data-parallel group (its Env says which)
)

// RoleOf is the role of a process asked to train with nproc processes (lcl
// train --nproc) in the environment env (FromEnv: nil outside a group);
// launched says whether Run started it (Launched). Its errors are requests
// that cannot be met: nproc < 1, or nproc > 1 in a process that a launcher
// (torchrun, srun) already started as a rank.
func RoleOf(env *Env, nproc int, launched bool) (Role, error) {
	switch {
	case env != nil && nproc > 1 && !launched:
		return 0, fmt.Errorf("--nproc %d: this process was started by a launcher (WORLD_SIZE=%d): drop --nproc", nproc, env.World)
	case env == nil && nproc > 1:
		return Launcher, nil
	case nproc < 1:
		return 0, fmt.Errorf("--nproc %d: want ≥ 1", nproc)
	case env != nil:
		return Worker, nil
	}
	return Single, nil
}

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
