// Package sysmem says how much memory this machine gives lcl: the smaller
// of the physical memory and the memory limit of lcl's control group, so
// that sizes can be checked before anything is allocated for them.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Total is the memory lcl may use in bytes, and whether it is known.
func Total() (int64, bool) {
	total, ok := memTotal("/proc/meminfo")
	if lim, lok := cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"); lok && (!ok || lim < total) {
		return lim, true
	}
	return total, ok
}

// memTotal reads MemTotal from a meminfo file.
func memTotal(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

// cgroupLimit reads the memory.max of this process's cgroup (v2).
func cgroupLimit(self, root string) (int64, bool) {
	raw, err := os.ReadFile(self)
	if err != nil {
		return 0, false
	}
	for l := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		if rest, ok := strings.CutPrefix(l, "0::"); ok {
			b, err := os.ReadFile(root + rest + "/memory.max")
			if err != nil {
				return 0, false
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n, err == nil && n > 0 // "max": no limit
		}
	}
	return 0, false
}
