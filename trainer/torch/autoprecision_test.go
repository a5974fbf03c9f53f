package torch

import (
	"os"
	"strings"
	"testing"
)

// TestAutoPrecision: CUDA devices get bf16; on the CPU the choice follows
// the kernel's view of the processor (/proc/cpuinfo's flags), an
// independent reading of what golang.org/x/sys/cpu decodes from CPUID.
func TestAutoPrecision(t *testing.T) {
	for _, dev := range []string{"cuda", "cuda:1"} {
		if p, why := AutoPrecision(dev); p != BF16 || why == "" {
			t.Errorf("%s: %v (%s), want bf16", dev, p, why)
		}
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatalf("the reference: %v", err)
	}
	var flags []string
	for _, line := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	has := func(f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	want := FP32
	if has("amx_bf16") || has("avx512_bf16") {
		want = BF16
	}
	p, why := AutoPrecision("cpu")
	if p != want {
		t.Errorf("cpu: %v (%s); /proc/cpuinfo has amx_bf16 %t, avx512_bf16 %t", p, why, has("amx_bf16"), has("avx512_bf16"))
	}
	t.Logf("cpu: %v (%s)", p, why)
}
