package torch

import (
	"os"
	"syscall"
)

// DefaultOMPWaitPolicy is the OpenMP wait policy lcl runs libtorch with
// unless the user set OMP_WAIT_POLICY. Measured on 2 shared cores
// (bench/trainer.sh, docs/trainer.md): with the default (active) policy
// OpenMP threads spin against Go's threads and other processes and the small
// CNN trained 2.4× slower than with PASSIVE.
const DefaultOMPWaitPolicy = "PASSIVE"

// ReexecWithOMPPolicy makes the process run with OMP_WAIT_POLICY set. The
// OpenMP runtime reads the variable when it is loaded, which for a binary
// linked with libtorch is before Go's main runs, so setting it later has no
// effect: when it is unset this re-executes the binary (/proc/self/exe) with
// the same arguments and OMP_WAIT_POLICY=DefaultOMPWaitPolicy. It returns
// only when no re-exec was needed or the re-exec failed. Call it first thing
// in main; never from tests or libraries.
func ReexecWithOMPPolicy() {
	if _, set := os.LookupEnv("OMP_WAIT_POLICY"); set {
		return
	}
	env := append(os.Environ(), "OMP_WAIT_POLICY="+DefaultOMPWaitPolicy)
	exe, err := os.Executable()
	if err != nil {
		return
	}
	// On failure keep running with the default policy: slower, not wrong.
	_ = syscall.Exec(exe, os.Args, env)
}
