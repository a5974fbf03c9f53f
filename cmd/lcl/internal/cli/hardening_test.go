package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/simstore"
)

// oneLineError asserts what the audit asked of every crafted input: exit
// status 1 and a last stderr line "lcl: …" that names the file and contains
// want.
func oneLineError(t *testing.T, name string, r cliResult, file, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.err), "\n")
	last := lines[len(lines)-1]
	if r.code != 1 || !strings.HasPrefix(last, "lcl: ") || !strings.Contains(last, file) || !strings.Contains(last, want) {
		t.Errorf("%s: exit %d, stderr %q\nwant exit 1 and one line naming %s with %q", name, r.code, r.err, file, want)
	}
}

func npyHeader(shape string) []byte {
	h := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }", shape)
	h += strings.Repeat(" ", (64-(10+len(h)+1)%64)%64) + "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(h)), 0}, h...)
}

// The audit's crafted inputs through the commands a user runs: each is
// refused in well under a second with one line naming the file.
func TestCraftedInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A 128-byte .npy claiming (2^32, 2^32) float64.
	huge := write("huge.npy", npyHeader("(4294967296, 4294967296)"))
	r := cliRun(t, "plan", "--strategy", "lcl", "--matrix", huge, "--epochs", "1", "--out", t.TempDir())
	oneLineError(t, "plan --matrix 2^32×2^32", r, huge, "more than 2147483648 elements")
	// Data shorter than the shape.
	short := write("short.npy", append(npyHeader("(10, 10)"), make([]byte, 16)...))
	r = cliRun(t, "--store", t.TempDir(), "similarity", "--synsets", "fashion-mnist", "--source", "matrix", "--file", short)
	oneLineError(t, "similarity --file short", r, short, "needs 800 bytes of data, the file holds 16")

	// A grid of 630 million runs.
	var g strings.Builder
	g.WriteString("labels: fashion-mnist\nmodels: [cnn]\nfractions: [1]\nseeds: [1, 2, 3]\nstrategies:\n  - name: lcl\n    params:\n")
	for _, k := range []string{"epsilon", "a", "b"} {
		fmt.Fprintf(&g, "      %s: [", k)
		for i := range 200 {
			fmt.Fprintf(&g, "%d, ", i)
		}
		g.WriteString("200]\n")
	}
	grid := write("huge.yaml", []byte(g.String()))
	r = cliRun(t, "--store", t.TempDir(), "experiment", "run", grid)
	oneLineError(t, "experiment run huge grid", r, grid, "the grid expands to 24361803 runs")

	// SimRank on 40,000 nodes.
	set, err := labels.Builtin("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	var e strings.Builder
	for _, c := range set.Classes {
		fmt.Fprintf(&e, "%s\troot\n", c.WNID)
	}
	for i := range 40000 {
		fmt.Fprintf(&e, "x%d\troot\n", i)
	}
	edges := write("big.edges", []byte(e.String()))
	// Plain SimRank computes only the classes' block (one internal node
	// here); SimRank*, which needs the dense form, is refused with the
	// estimate and the flags that change it.
	r = cliRun(t, "--store", t.TempDir(), "similarity", "--synsets", "fashion-mnist", "--source", "simrank", "--graph", edges)
	if r.code != 0 {
		t.Errorf("plain simrank on 40k nodes: exit %d: %s", r.code, r.err)
	}
	r = cliRun(t, "--store", t.TempDir(), "similarity", "--synsets", "fashion-mnist", "--source", "simrank", "--graph", edges, "--variant", "star", "--max-memory", "8GB")
	oneLineError(t, "similarity simrank* 40k nodes", r, edges, "SimRank variant star on 40011 nodes (3 dense 40011×40011 float64 matrices; --variant jeh-widom computes only the classes' block) needs about 38.4 GB, over the memory limit of 8.0 GB (--max-memory")

	// A gzip IDX whose header declares 4 GiB (a 4 KB file).
	var raw bytes.Buffer
	raw.Write([]byte{0, 0, 8, 3})
	for _, d := range []uint32{1 << 22, 32, 32} {
		binary.Write(&raw, binary.BigEndian, d)
	}
	raw.Write(make([]byte, 1<<20))
	var gzb bytes.Buffer
	zw := gzip.NewWriter(&gzb)
	zw.Write(raw.Bytes())
	zw.Close()
	idx := write("mnist/train-images-idx3-ubyte.gz", gzb.Bytes())
	write("mnist/train-labels-idx1-ubyte", []byte{0, 0, 8, 1, 0, 0, 0, 1, 0})
	r = cliRun(t, "--store", t.TempDir(), "train", "--synsets", "mnist", "--data", "mnist:"+filepath.Dir(idx), "--epochs", "1", "--no-store", "--out", filepath.Join(t.TempDir(), "run"))
	oneLineError(t, "train on a gzip IDX bomb", r, idx, "make 4 GiB of data, more than the 1 GiB limit")

	// WordNet with a pointer count of 2^62.
	wn := write("wn/data.noun", []byte("00000000 03 n 01 entity 0 4611686018427387904 @ 00001740 n 0000 | x\n"))
	r = cliRun(t, "--wordnet", filepath.Dir(wn), "synsets", "imagenet")
	oneLineError(t, "synsets with a crafted data.noun", r, wn+":1", "p_cnt 4611686018427387904 but only 4 fields follow")
}

// A world-writable plugin (or one in a world-writable folder) is refused.
func TestWorldWritablePluginRefused(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	p := filepath.Join(dir, "lcl-strategy-evil")
	os.WriteFile(p, []byte("#!/bin/sh\ntouch "+filepath.Join(dir, "ran")+"\n"), 0o755)
	t.Setenv("LCL_PLUGIN_PATH", dir)
	r := cliRun(t, "plan", "--strategy", "evil", "--matrix", writeWorkedExample(t), "--epochs", "1", "--out", t.TempDir())
	oneLineError(t, "plan with a plugin in a world-writable folder", r, p, "refused: folder "+dir+" is writable by others (mode drwxrwxrwx; chmod o-w "+dir+")")
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the refused plugin ran")
	}
	r = cliRun(t, "plugins", "list")
	if r.code != 0 || !regexp.MustCompile(`strategy\s+evil\s+REFUSED\s+-\s+`+regexp.QuoteMeta(p)).MatchString(r.out) {
		t.Errorf("plugins list: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("plugins list ran a plugin")
	}
}

// lcl plugins pin writes the lock file; --require-pinned then refuses what
// is not pinned, and a pinned plugin that changed is refused.
func TestPluginsPinCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lcl-strategy-x")
	os.WriteFile(p, []byte("#!/bin/sh\nexit 1\n"), 0o755)
	lock := filepath.Join(t.TempDir(), "plugins.lock")
	t.Setenv("LCL_PLUGIN_PATH", dir)
	t.Setenv("LCL_PLUGIN_LOCK", lock)
	m := t.TempDir()
	r := cliRun(t, "--require-pinned", "plan", "--strategy", "x", "--matrix", writeWorkedExample(t), "--epochs", "1", "--out", m)
	oneLineError(t, "unpinned with --require-pinned", r, p, "refused: not pinned in "+lock)
	r = cliRun(t, "plugins", "pin")
	if r.code != 0 || !strings.HasPrefix(r.out, "pinned strategy x sha256:") {
		t.Fatalf("pin: exit %d\n%s%s", r.code, r.out, r.err)
	}
	raw, _ := os.ReadFile(lock)
	if !strings.Contains(string(raw), "strategy x ") || !strings.Contains(string(raw), " "+p+"\n") {
		t.Fatalf("lock file:\n%s", raw)
	}
	os.WriteFile(p, []byte("#!/bin/sh\nexit 2\n"), 0o755)
	r = cliRun(t, "plan", "--strategy", "x", "--matrix", writeWorkedExample(t), "--epochs", "1", "--out", t.TempDir())
	oneLineError(t, "changed after pinning", r, p, "refused: its SHA-256 ")
	r = cliRun(t, "plugins", "list", "x")
	if r.code != 0 || !regexp.MustCompile(`strategy\s+x\s+\?\s+changed\s+`).MatchString(r.out) {
		t.Errorf("plugins list x:\n%s%s", r.out, r.err)
	}
	if r := cliRun(t, "plugins", "pin", "nope"); r.code != 1 || !strings.Contains(r.err, `no plugin "nope"`) {
		t.Errorf("pin nope: exit %d %s", r.code, r.err)
	}
}

// A panic prints one line naming the report and exits with 70.
func TestPanicIsOneLine(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"boom"}, &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb},
		func(*Factory) *cobra.Command {
			root := &cobra.Command{Use: "lcl", SilenceErrors: true, SilenceUsage: true}
			root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
				var s []int
				_ = s[3]
				return nil
			}})
			return root
		})
	line := strings.TrimSpace(errb.String())
	m := regexp.MustCompile(`^lcl: internal error \(a bug in lcl, please report it\): runtime error: index out of range \[3\] with length 0 \(full report in (\S+)\)$`).FindStringSubmatch(line)
	if code != 70 || m == nil {
		t.Fatalf("exit %d, stderr %q", code, line)
	}
	if raw, err := os.ReadFile(m[1]); err != nil || !strings.Contains(string(raw), "hardening_test.go") {
		t.Fatalf("report %s: %v", m[1], err)
	}
}

// `lcl plugins serve` ends on SIGTERM (lcl's own handler used to swallow it).
func TestPluginsServeExitsOnSIGTERM(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "plugins", "serve", "strategy", "sl")
	cmd.Env = append(os.Environ(), "LCL_TEST_CLI=1", "LCL_PLUGIN_MAGIC_COOKIE=9f1c0b7e-lcl-label-similarity-curriculum",
		fmt.Sprint("PLUGIN_PROTOCOL_VERSIONS=", plugins.ProtocolVersion), "PLUGIN_MIN_PORT=0", "PLUGIN_MAX_PORT=0",
		"TMPDIR="+t.TempDir()) // the socket of a server killed by a signal stays: in the test's folder
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, fmt.Sprintf("1|%d|", plugins.ProtocolVersion)) {
		t.Fatalf("handshake %q: %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT) // go-plugin ignores it: the host decides
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGTERM {
			t.Errorf("serve ended with %v, want killed by SIGTERM", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("plugins serve ignored SIGTERM")
	}
}

// lcl store verify lists a damaged record and exits 1; read-only commands
// work beside one another.
func TestStoreVerifyAndReadOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := simstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		s.PutArticles(ctx, simstore.Article{LabelSet: "x", ClassID: fmt.Sprint("c", i), Text: "short"})
	}
	s.PutArticles(ctx, simstore.Article{LabelSet: "x", ClassID: "big", Text: strings.Repeat("y", 2<<20)})
	s.Close()
	if r := cliRun(t, "--store", dir, "store", "verify"); r.code != 0 || !strings.Contains(r.err, "checked 1 table files and 6 records in "+dir+": 0 damaged") {
		t.Fatalf("undamaged: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// A reader holds the store: other read-only commands still run.
	ro, err := simstore.Open(dir, simstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if r := cliRun(t, "--store", dir, "store", "ls", "--all"); r.code != 0 || strings.Count(r.out, "art/x/") != 6 {
		t.Errorf("store ls beside a reader: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := cliRun(t, "--store", dir, "store", "rm", "art/x/c1"); r.code != 1 || !strings.Contains(r.err, "store is in use by another process") {
		t.Errorf("store rm beside a reader: exit %d %s", r.code, r.err)
	}
	ro.Close()
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	b, _ := os.ReadFile(vlogs[0])
	b[len(b)/2] ^= 1
	os.WriteFile(vlogs[0], b, 0o644)
	r := cliRun(t, "--store", dir, "store", "verify")
	if r.code != 1 || strings.TrimSpace(r.out) != `damaged: key "art/x/big": the value cannot be read (its value-log entry is damaged)` ||
		!strings.Contains(r.err, "lcl: store "+dir+": 1 damaged (listed above)") {
		t.Fatalf("damaged: exit %d\n%s%s", r.code, r.out, r.err)
	}
}
