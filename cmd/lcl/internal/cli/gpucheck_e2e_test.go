//go:build e2e

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/testdep"
)

// TestGPUCheckCPU runs scripts/gpu-check.sh --cpu, the device check's every
// step on the CPU against Debian's libtorch: the bundle (make gpu-bundle:
// lcl with -tags ltshim), the shim built by build-shim.sh, lcl train and
// eval, lcl bench step next to bench/step_ref.py, the image pipeline. Every
// step must pass and the table must carry numbers, so the script the GPU
// machine runs cannot rot here.
func TestGPUCheckCPU(t *testing.T) {
	testdep.PythonModules(t, "torch")
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if out, err := exec.Command("sh", filepath.Join(root, "scripts/gpu-bundle.sh")).CombinedOutput(); err != nil {
		t.Fatalf("gpu-bundle.sh: %v\n%s", err, out)
	}
	// A copy, so the test does not depend on the repository's .gpucheck
	// staying put while it runs.
	if err := os.MkdirAll(filepath.Join(bundle, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lcl", "lib/libjpeg.so.62"} {
		b, err := os.ReadFile(filepath.Join(root, ".gpucheck", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bundle, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), out, "--cpu")
	cmd.Env = append(os.Environ(), "LCL_GPUCHECK_BUNDLE="+bundle)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh --cpu: %v\n%s", err, log)
	}
	table, err := os.ReadFile(filepath.Join(out, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	tb := string(table)
	for _, want := range []string{"| same accuracy on CPU and GPU | yes |", "data-parallel backends: gloo", "same: yes (test loss", "(group term in float64) on cpu and cpu | OK / OK: same: yes", "(libjpeg-turbo"} {
		if !strings.Contains(tb, want) {
			t.Errorf("table lacks %q:\n%s", want, tb)
		}
	}
	// Six throughput rows, each with both sides' img/s and a ratio.
	row := regexp.MustCompile(`(?m)^\| ResNet-\S+ [^|]+ \| [^|]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|`)
	if n := len(row.FindAllString(tb, -1)); n != 6 {
		t.Errorf("%d complete throughput rows, want 6:\n%s", n, tb)
	}
	if _, err := os.Stat(filepath.Join(out, "logs.tgz")); err != nil {
		t.Errorf("logs not packed: %v", err)
	}
}
