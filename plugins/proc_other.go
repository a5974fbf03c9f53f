//go:build !linux

package plugins

import "syscall"

// procAttr: no parent-death signal outside Linux.
func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}
