//go:build unix

package trainer

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far, in user mode and
// in the kernel (all threads: Go's, OpenMP's and libtorch's).
func processCPU() (user, system time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
