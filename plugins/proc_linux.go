package plugins

import (
	"os"
	"syscall"
)

// procAttr puts a plugin in its own process group and kills it when the
// thread that started it (see Host.start) ends: when lcl dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group a plugin leads.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

// matrixBase is where plugins' matrix folders go: /dev/shm when it is a
// folder with 4 GiB free (memory: shared matrices never touch a disk), else
// the temporary folder.
func matrixBase() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err == nil && uint64(st.Bavail)*uint64(st.Bsize) >= 4<<30 {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
