package plugins

import "syscall"

// procAttr puts a plugin in its own process group and kills it when the
// thread that started it (see Host.start) ends: when lcl dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group a plugin leads.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
