package models

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/bounded/boundedtest"
	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer/torch"
)

// archive writes a zip of the given entries (name → content; a name
// ending in "~" is stored deflated, under the name without it).
func archive(t *testing.T, path string, entries map[string]string) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range entries {
		m := zip.Store
		if n, ok := strings.CutSuffix(name, "~"); ok {
			name, m = n, zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: m})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The checks of a TorchScript file that need no libtorch, on crafted
// archives: trust, the pinned digest, the archive's declared sizes (a
// 2.5 MB file whose data/0 inflates to 2.2 GB was inflated whole: issue 23,
// item 10) and the calls of its code (item 2).
func TestScriptFileChecks(t *testing.T) {
	dir := t.TempDir()
	code := func(body string) map[string]string {
		return map[string]string{"m/data.pkl": "pickle", "m/data/0": "1234", "m/code/__torch__.py~": body, "m/version": "3"}
	}
	for _, c := range []struct {
		name    string
		entries map[string]string
		want    string // "" accepted
	}{
		{"clean", code("def forward(self, x):\n  return torch.relu(ops.aten.relu(x))\n"), ""},
		{"a string and a comment are not calls", code("def forward(self, x):\n  # torch.save(x)\n  _0 = \"torch.save(x, 'f')\"\n  return x\n"), ""},
		{"a method of its own named save", code("def forward(self, x):\n  return self.save(x)\n"), ""},
		{"torch.save", code("class M(Module):\n  def __setstate__(self, s):\n    torch.save(x, \"/tmp/f\")\n"), "m/code/__torch__.py:3 calls torch.save, which reaches the file system"},
		{"torch.from_file", code("def forward(self, x):\n  t = torch.from_file(\"/etc/passwd\", True, 16)\n"), ":2 calls torch.from_file"},
		{"print", code("def forward(self, x):\n  print(\"hi\")\n"), ":2 calls print"},
		{"c10d", code("def forward(self, x):\n  _0 = ops.c10d.send([x], 1)\n"), ":2 calls ops.c10d"},
		{"another library's operator", code("def forward(self, x):\n  return ops.torchvision.nms(x, x, 0.5)\n"), ":2 calls ops.torchvision"},
		{"rpc", code("def forward(self, x):\n  f = rpc_async(\"w\", x)\n"), ":2 calls rpc_async"},
		{"deflated tensor data", map[string]string{"m/data/0~": strings.Repeat("\x00", 4<<20), "m/code/__torch__.py~": "x"},
			"archive entry m/data/0 is compressed (4 MiB from 4 KiB): PyTorch stores tensor data uncompressed"},
		{"huge code", map[string]string{"m/code/big.py~": strings.Repeat(" ", 65<<20)}, "archive entry m/code/big.py inflates to 65 MiB: want at most 64 MiB"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".pt")
		archive(t, path, c.entries)
		var err error
		boundedtest.MaxAlloc(t, 8<<20, c.name, func() { err = checkScriptFile(scriptRef{path: path}, false) })
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// --trust-model: the calls are allowed, the archive's sizes still checked.
	path := filepath.Join(dir, "torch.save.pt")
	if err := checkScriptFile(scriptRef{path: path}, true); err != nil {
		t.Errorf("trusted: %v", err)
	}
	if err := checkScriptFile(scriptRef{path: filepath.Join(dir, "deflated_tensor_data.pt")}, true); err == nil {
		t.Error("trusted: a deflated data entry was accepted")
	}
	// A pinned digest must match.
	clean := filepath.Join(dir, "clean.pt")
	raw, _ := os.ReadFile(clean)
	sum := sha256.Sum256(raw)
	ref, err := parseScriptRef(clean + "@sha256:" + hex.EncodeToString(sum[:]))
	if err != nil || ref.path != clean {
		t.Fatalf("parseScriptRef: %+v, %v", ref, err)
	}
	if err := checkScriptFile(ref, false); err != nil {
		t.Errorf("the pinned digest: %v", err)
	}
	ref.sha256 = strings.Repeat("0", 64)
	if err := checkScriptFile(ref, false); err == nil || !strings.Contains(err.Error(), "refused: its SHA-256 is "+hex.EncodeToString(sum[:])+", not the pinned 0000") {
		t.Errorf("another digest: %v", err)
	}
	if _, err := parseScriptRef(clean + "@sha256:abc"); err == nil {
		t.Error("a short digest was accepted")
	}
	// Writable by others, or owned by another user: refused as a plugin is.
	os.Chmod(clean, 0o666)
	if err := checkScriptFile(scriptRef{path: clean}, true); err == nil || !strings.Contains(err.Error(), "is writable by others") {
		t.Errorf("a world-writable file: %v", err)
	}
	os.Chmod(clean, 0o644)
	if os.Geteuid() == 0 {
		os.Chown(clean, 4242, 4242)
		if err := checkScriptFile(scriptRef{path: clean}, true); err == nil || !strings.Contains(err.Error(), "is owned by uid 4242") {
			t.Errorf("another user's file: %v", err)
		}
	}
}

// TorchScript files saved by Debian's PyTorch, through Registry.Get: a
// model whose __setstate__ writes a file is refused before libtorch loads
// it (nothing is written); one whose forward calls torch.from_file is
// refused by the scan of the loaded graphs too (what the text scan might
// miss); one that gives [1, C] in training mode only is refused (item 14:
// the loss broadcast and training ran); a clean one loads.
func TestScriptModelsRefused(t *testing.T) {
	py := testdep.PythonModules(t, "torch")
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	maker := filepath.Join(dir, "make.py")
	os.WriteFile(maker, []byte(strings.ReplaceAll(`
import sys, torch
dir, victim = sys.argv[1], sys.argv[2]
class Good(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(1)
        self.fc = torch.nn.Linear(64, 3)
    def forward(self, x):
        return self.fc(torch.flatten(self.bn(x), 1))
class TrainOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 3)
    def forward(self, x):
        y = self.fc(torch.flatten(x, 1))
        if self.training:
            return y[:1]
        return y
class FromFile(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 3)
    def forward(self, x):
        t = torch.from_file(VICTIM, True, 16)
        t.fill_(7)
        return self.fc(torch.flatten(x, 1)) + t.sum() * 0
class SetState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(3, 64))
    def forward(self, x):
        return torch.flatten(x, 1) @ self.w.t()
    @torch.jit.export
    def __getstate__(self):
        return (self.w, self.training)
    @torch.jit.export
    def __setstate__(self, s: tuple[torch.Tensor, bool]):
        self.w = s[0]
        self.training = s[1]
        torch.save(s[0], VICTIM)
for name, M in [("good", Good), ("trainonly", TrainOnly), ("fromfile", FromFile), ("setstate", SetState)]:
    torch.jit.script(M()).save(f"{dir}/{name}.pt")
`, "VICTIM", strconv.Quote(victim))), 0o644)
	if out, err := py.Command(maker, dir, victim).CombinedOutput(); err != nil {
		t.Fatalf("make.py: %v\n%s", err, out)
	}
	in := Input{C: 1, H: 8, W: 8, NumClasses: 3}
	r := Builtin()
	get := func(name string) error {
		_, err := r.Get(ScriptPrefix+filepath.Join(dir, name+".pt"), in)
		return err
	}
	if err := get("good"); err != nil {
		t.Fatalf("a clean model: %v", err)
	}
	for _, c := range []struct{ name, want string }{
		{"setstate", "setstate/code/__torch__.py:"},
		{"fromfile", "calls torch.from_file"},
		{"trainonly", "gives [1, 3] in training mode for 2 input(s) of 1x8x8, want [2, 3]"},
	} {
		if err := get(c.name); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(victim); err == nil {
		t.Fatal("a refused model wrote its file")
	}
	// The graph scan after loading, on its own (the text scan refused first).
	_, err := torch.LoadScript(filepath.Join(dir, "fromfile.pt"), 1, 8, 8, 3, false)
	if err == nil || !strings.Contains(err.Error(), "__torch__.FromFile.forward calls aten::from_file, which reaches the file system, the network or the terminal; refused") {
		t.Errorf("the graph scan: %v", err)
	}
	if _, err := os.Stat(victim); err == nil {
		t.Fatal("the graph scan let forward run")
	}
	// --trust-model runs it (and it writes).
	os.WriteFile(victim, make([]byte, 64), 0o644)
	r.TrustScripts = true
	if err := get("fromfile"); err != nil {
		t.Errorf("trusted: %v", err)
	}
	if b, _ := os.ReadFile(victim); bytes.Equal(b, make([]byte, 64)) {
		t.Error("the trusted model did not run (its forward writes the file)")
	}
	if err := get("trainonly"); err == nil {
		t.Error("trusted: a wrong training-mode shape was accepted")
	}
}
