package cli

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/trainer/safetensors"
)

func writeSafetensors(t *testing.T, path string, ts []safetensors.Tensor, meta map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, ts, meta); err != nil {
		t.Fatal(err)
	}
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// Files read whole are checked first, against their own headers or the
// file system: an --init, a --matrix or a dir: document that links to
// /dev/zero, and an --init padded with 2.5 GB of zeros, are refused in one
// line, in bounded time and memory (issue 23, item 7: Go's fatal
// out-of-memory error); weights holding NaN are refused at load, by train
// (--init) and eval (item 15: an epoch ran, then nothing was saved; eval
// reported loss NaN with exit 0).
func TestFilesCheckedBeforeRead(t *testing.T) {
	needWordNet(t)
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.safetensors")
	os.Symlink("/dev/zero", zero)
	zeroCSV := filepath.Join(dir, "zero.csv")
	os.Symlink("/dev/zero", zeroCSV)
	docs := filepath.Join(dir, "docs")
	os.MkdirAll(docs, 0o755)
	os.Symlink("/dev/zero", filepath.Join(docs, "n03595614.txt")) // fashion-mnist's T-shirt
	padded := filepath.Join(dir, "padded.safetensors")
	writeSafetensors(t, padded, []safetensors.Tensor{{Name: "fc.weight", DType: "F32", Shape: []int64{1}, Data: f32s(1)}}, nil)
	if err := os.Truncate(padded, 2500<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	nan := filepath.Join(dir, "nan.safetensors")
	writeSafetensors(t, nan, []safetensors.Tensor{
		{Name: "bn1.running_mean", DType: "F32", Shape: []int64{3}, Data: f32s(0, float32(math.NaN()), 0)},
		{Name: "fc.weight", DType: "F32", Shape: []int64{1}, Data: f32s(1)},
	}, map[string]string{"lcl.model": "mlp:hidden=16", "lcl.data": synth})
	out := func() string { return filepath.Join(t.TempDir(), "run") }
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--init /dev/zero", []string{"train", "--data", synth, "--model", "mlp", "--init", zero, "--no-store", "--out", out()}, zero + ": not a regular file (a character device)"},
		{"--init padded", []string{"train", "--data", synth, "--model", "mlp", "--init", padded, "--no-store", "--out", out()}, padded + ": not a valid safetensors file: its header declares 4 bytes of tensor data, the file holds 2621439928 after the header"},
		{"--init NaN", []string{"train", "--data", synth, "--model", "mlp", "--init", nan, "--no-store", "--out", out()}, "--init " + nan + `: tensor "bn1.running_mean" holds NaN at index 1: weights must be finite`},
		{"eval NaN", []string{"eval", "--checkpoint", nan}, nan + `: tensor "bn1.running_mean" holds NaN at index 1: weights must be finite`},
		{"plan --matrix /dev/zero", []string{"plan", "--strategy", "lcl", "--matrix", zeroCSV, "--epochs", "1", "--out", t.TempDir()}, zeroCSV + ": not a regular file (a character device)"},
		{"dir: document /dev/zero", []string{"--store", t.TempDir(), "wiki", "fetch", "--synsets", "fashion-mnist", "--source", "dir:" + docs}, "n03595614.txt: not a regular file (a character device)"},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		r := cliRun(t, c.args...)
		runtime.ReadMemStats(&after)
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s: took %v", c.name, took)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("%s: allocated %d MiB", c.name, alloc>>20)
		}
		if r.code != ExitFailure || !strings.Contains(r.err+r.out, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.name, r.code, r.out, r.err, c.want)
		}
	}
}

// A TorchScript file is refused, before libtorch loads it, when its code
// calls torch.save (its __setstate__ would run while it loads), when
// others can write it, and when its pinned digest differs (issue 23,
// item 2); lcl train --help says it is a program.
func TestTorchScriptTreatedAsPlugin(t *testing.T) {
	dir := t.TempDir()
	pt := filepath.Join(dir, "m.pt")
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("m/code/__torch__.py")
	w.Write([]byte("class M(Module):\n  def __setstate__(self, s):\n    torch.save(s, \"/tmp/x\")\n"))
	zw.Close()
	os.WriteFile(pt, b.Bytes(), 0o644)
	r := cliRun(t, "train", "--data", synth, "--model", "torchscript:"+pt, "--no-store", "--out", filepath.Join(dir, "run"))
	oneLineError(t, "a TorchScript model calling torch.save", r, pt, "m/code/__torch__.py:3 calls torch.save, which reaches the file system")
	r = cliRun(t, "train", "--data", synth, "--model", "torchscript:"+pt+"@sha256:"+strings.Repeat("ab", 32), "--no-store", "--out", filepath.Join(dir, "run"))
	oneLineError(t, "a pinned digest that differs", r, pt, "refused: its SHA-256 is ")
	os.Chmod(pt, 0o664)
	r = cliRun(t, "train", "--data", synth, "--model", "torchscript:"+pt, "--trust-model", "--no-store", "--out", filepath.Join(dir, "run"))
	oneLineError(t, "a group-writable TorchScript file", r, pt, "is writable by its group")
	r = cliRun(t, "help", "torchscript")
	if !strings.Contains(r.out, "A TorchScript file is a program") || !strings.Contains(r.out, "--trust-model") {
		t.Errorf("lcl help torchscript does not say a TorchScript file is a program:\n%s", r.out)
	}
}

// A file name holding a newline cannot forge a line of lcl's output: the
// error is one line, the name quoted or escaped (issue 23, item 19: the
// name printed raw put "lcl: run finished OK" on a line of its own).
func TestFileNameCannotForgeALine(t *testing.T) {
	dir := t.TempDir()
	forged := filepath.Join(dir, "w\nlcl: run finished OK\n.safetensors")
	if err := os.WriteFile(forged, []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"train", "--data", synth, "--model", "mlp", "--init", forged, "--no-store", "--out", filepath.Join(dir, "run")},
		{"eval", "--checkpoint", forged},
		{"plan", "--strategy", "lcl", "--matrix", forged, "--epochs", "1", "--out", t.TempDir()},
	} {
		r := cliRun(t, args...)
		for _, l := range strings.Split(r.err, "\n") {
			if l == "lcl: run finished OK" {
				t.Errorf("%s: the file name forged a line: %q", args[0], r.err)
			}
		}
		last := strings.Split(strings.TrimSpace(r.err), "\n")
		if r.code != ExitFailure || !strings.Contains(last[len(last)-1], `w\nlcl: run finished OK\n.safetensors`) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and the name escaped on the error's line", args[0], r.code, r.err)
		}
	}
}
