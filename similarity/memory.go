package similarity

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/sysmem"
)

// DefaultMaxMemory is the memory a computation may plan for when no limit
// is given: what this machine gives lcl (internal/sysmem: the physical
// memory, or its control group's limit), else 8 GiB where it cannot be read.
func DefaultMaxMemory() int64 {
	if total, ok := sysmem.Total(); ok {
		return total
	}
	return 8 << 30
}

// ParseBytes reads a size as --max-memory takes it: a number of bytes with
// an optional unit, kB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB
// (powers of 2), e.g. "8GB", "6.5 GiB", "500000000".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[strings.ToLower(unit)]
	x, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || x <= 0 || x*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size (want a positive number of bytes with an optional unit: 8GB, 6GiB, 500MB)", s)
	}
	return int64(x * mult), nil
}

// maxMemory is limit, or DefaultMaxMemory when limit is 0.
func maxMemory(limit int64) int64 {
	if limit > 0 {
		return limit
	}
	return DefaultMaxMemory()
}

// GB formats a byte count as lcl's messages do ("18.0 GB", powers of 10).
func GB(b int64) string { return fmt.Sprintf("%.1f GB", float64(b)/1e9) }

// MatrixBytes is the size of a C×C float32 matrix.
func MatrixBytes(c int) int64 { return 4 * int64(c) * int64(c) }

// checkMemory refuses a computation whose estimate exceeds the limit,
// naming both and the flag that changes the limit.
func checkMemory(what string, need, limit int64) error {
	if lim := maxMemory(limit); need > lim {
		return fmt.Errorf("%s needs about %s, over the memory limit of %s (--max-memory; default: this machine's memory)", what, GB(need), GB(lim))
	}
	return nil
}
