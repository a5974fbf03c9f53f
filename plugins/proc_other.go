//go:build !linux

package plugins

import (
	"os"
	"syscall"
)

// procAttr: no parent-death signal outside Linux.
func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(int) {}

// matrixBase is where plugins' matrix folders go: the temporary folder.
func matrixBase() string { return os.TempDir() }
