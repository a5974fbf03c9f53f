package plugins

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/plugins/sdk"
)

// As a helper process (LCL_TEST_PLUGIN_HOST set) the test binary is a host
// that starts the "hang" plugin from a goroutine locked to a thread that
// then ends, prints the plugin's pid and waits to be killed.
func init() {
	dir := os.Getenv("LCL_TEST_PLUGIN_HOST")
	if dir == "" {
		return
	}
	exe, _ := os.Executable()
	h := &Host{Dirs: []string{dir}, Self: []string{exe}}
	got := make(chan *Strategy)
	go func() {
		runtime.LockOSThread()
		st, err := h.Strategy("hang")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		got <- st
	}() // exits locked: Go ends this thread
	st := <-got
	time.Sleep(200 * time.Millisecond)
	fmt.Println(st.c.pid)
	time.Sleep(time.Hour)
}

func writePlugin(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "lcl-strategy-"+name)
	if err := os.WriteFile(p, []byte(fmt.Sprintf("#!/bin/sh\nexec %q strategy hang\n", exe)), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// The audit's case: a group/world-writable plugin in a world-writable
// folder on the plugin path was run. Now each is refused with one line
// naming what is writable by whom.
func TestUntrustedPluginsAreRefused(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	mine := t.TempDir()
	sticky := t.TempDir()
	os.Chmod(sticky, 0o777|os.ModeSticky)
	for _, c := range []struct {
		name, dir string
		mode      os.FileMode
		want      string // "" = admitted
	}{
		{"infolder", open, 0o755, fmt.Sprintf("folder %s is writable by others (mode drwxrwxrwx; chmod o-w %s)", open, open)},
		{"worldfile", mine, 0o757, fmt.Sprintf("file %s is writable by others (mode -rwxr-xrwx; chmod o-w %s)", filepath.Join(mine, "lcl-strategy-worldfile"), filepath.Join(mine, "lcl-strategy-worldfile"))},
		{"groupfile", mine, 0o775, fmt.Sprintf("file %s is writable by its group (mode -rwxrwxr-x; chmod g-w %s)", filepath.Join(mine, "lcl-strategy-groupfile"), filepath.Join(mine, "lcl-strategy-groupfile"))},
		{"sticky", sticky, 0o755, ""},
		{"fine", mine, 0o755, ""},
	} {
		path := writePlugin(t, c.dir, c.name, c.mode)
		err := CheckTrusted(path)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: CheckTrusted = %v\nwant %s", c.name, err, c.want)
		}
		h := &Host{Dirs: []string{c.dir}, Lock: filepath.Join(t.TempDir(), "none.lock")}
		_, err = h.Strategy(c.name)
		want := fmt.Sprintf("strategy plugin %q (%s): refused: %s", c.name, path, c.want)
		if err == nil || err.Error() != want {
			t.Errorf("%s: Strategy = %v\nwant %s", c.name, err, want)
		}
		found := Discover([]string{c.dir})
		for _, f := range found {
			if f.Name == c.name && f.Refused != c.want {
				t.Errorf("%s: Discover says refused %q", c.name, f.Refused)
			}
		}
	}
	// A link from a good folder to a plugin in a bad one is refused too.
	link := filepath.Join(mine, "lcl-strategy-link")
	if err := os.Symlink(filepath.Join(open, "lcl-strategy-infolder"), link); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(link); err == nil || !strings.Contains(err.Error(), "folder "+open+" is writable by others") {
		t.Errorf("link into a world-writable folder: %v", err)
	}
}

func TestJudgeOwner(t *testing.T) {
	if err := judge("/x/p", false, 4242, 0o755, 1000); err == nil || !strings.HasPrefix(err.Error(), "file /x/p is owned by ") || !strings.Contains(err.Error(), "not by you (") {
		t.Errorf("someone else's file: %v", err)
	}
	if err := judge("/x", true, 0, 0o755, 1000); err != nil {
		t.Errorf("root's folder: %v", err)
	}
	if err := judge("/x", true, 1000, 0o777|os.ModeDir|os.ModeSticky, 1000); err != nil {
		t.Errorf("sticky folder: %v", err)
	}
	if os.Geteuid() == 0 { // root can make a file someone else's for real
		dir := t.TempDir()
		p := writePlugin(t, dir, "nobody", 0o755)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := CheckTrusted(p); err == nil || !strings.Contains(err.Error(), "file "+p+" is owned by ") {
			t.Errorf("a file of uid 65534: %v", err)
		}
	}
}

// Pinning: a pinned plugin starts while its digest matches, is refused
// once the file changes or moves, and --require-pinned refuses unpinned
// ones. go-plugin's SecureConfig does the final check.
func TestPins(t *testing.T) {
	dir := t.TempDir()
	path := writePlugin(t, dir, "p", 0o755)
	lock := filepath.Join(t.TempDir(), "plugins.lock")
	h := &Host{Dirs: []string{dir}, Lock: lock, RequirePinned: true, Timeout: 5 * time.Second}
	t.Cleanup(h.Close)
	want := fmt.Sprintf(`strategy plugin "p" (%s): refused: not pinned in %s, and pins are required (--require-pinned); check the plugin, then run `+"`lcl plugins pin p`", path, lock)
	if _, err := h.Strategy("p"); err == nil || err.Error() != want {
		t.Fatalf("unpinned with RequirePinned: %v\nwant %s", err, want)
	}
	sum, err := digest.File(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePins(lock, Pins{"strategy/p": {Kind: KindStrategy, Name: "p", SHA256: sum, Path: path}}); err != nil {
		t.Fatal(err)
	}
	st, err := h.Strategy("p")
	if err != nil {
		t.Fatalf("pinned plugin: %v", err)
	}
	st.Close()
	list, err := h.List(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list {
		if d.Name == "p" && (d.Pin != "ok" || d.Version != "") {
			t.Errorf("listed as %+v, want pin ok and not described", d)
		}
	}
	// The file changes after pinning.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("# changed\n")
	f.Close()
	_, err = h.Strategy("p")
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf(`strategy plugin "p" (%s): refused: its SHA-256 `, path)) || !strings.Contains(err.Error(), "differs from the one pinned in "+lock+" ("+sum[:12]+"…)") {
		t.Fatalf("changed plugin: %v", err)
	}
	// Pinned at another path.
	WritePins(lock, Pins{"strategy/p": {Kind: KindStrategy, Name: "p", SHA256: sum, Path: "/elsewhere/lcl-strategy-p"}})
	if _, err := h.Strategy("p"); err == nil || !strings.Contains(err.Error(), "refused: pinned in "+lock+" at /elsewhere/lcl-strategy-p, but found at "+path) {
		t.Fatalf("moved plugin: %v", err)
	}
	// A lock file others may write is not believed.
	os.Chmod(lock, 0o666)
	if _, err := h.Strategy("p"); err == nil || !strings.Contains(err.Error(), "plugin lock file "+lock+" refused: file "+lock+" is writable by others") {
		t.Fatalf("world-writable lock: %v", err)
	}
	os.Chmod(lock, 0o644)
	os.WriteFile(lock, []byte("strategy p nothex /x\n"), 0o644)
	if _, err := ReadPins(lock); err == nil || !strings.Contains(err.Error(), lock+":1: want") {
		t.Fatalf("malformed lock: %v", err)
	}
}

// A plugin gets PATH, HOME, the locale and what LCL_PLUGIN_ENV names, not
// the rest of lcl's environment (credentials, rendezvous secrets).
func TestPluginEnvironment(t *testing.T) {
	t.Setenv("LCL_TEST_SECRET", "s3cret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
	t.Setenv("LCL_TEST_PASSED", "yes")
	t.Setenv("LCL_PLUGIN_ENV", "LCL_TEST_PASSED")
	t.Setenv("LC_ALL", "C.UTF-8")
	h := testHost(t)
	h.Env = []string{"LCL_PLUGIN_STORE=/s"}
	st, err := h.Strategy("env")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range strings.Split(info.Summary, "\x00") {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	for _, k := range []string{"LCL_TEST_SECRET", "AWS_SECRET_ACCESS_KEY", "LCL_PLUGIN_ENV"} {
		if _, ok := env[k]; ok {
			t.Errorf("the plugin sees %s", k)
		}
	}
	for k, v := range map[string]string{"PATH": os.Getenv("PATH"), "LCL_TEST_PASSED": "yes", "LC_ALL": "C.UTF-8", "LCL_PLUGIN_STORE": "/s"} {
		if env[k] != v {
			t.Errorf("the plugin sees %s=%q, want %q", k, env[k], v)
		}
	}
	if env["LCL_PLUGIN_MAGIC_COOKIE"] == "" {
		t.Error("the handshake cookie is missing")
	}
}

// A stage named like a path (lcl plan would write outside --out) is refused.
func TestStageNamesArePlain(t *testing.T) {
	h := testHost(t)
	st, err := h.Strategy("badstage")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Begin(context.Background(), testRun(2, 4))
	if err == nil || !strings.HasSuffix(err.Error(), `: Begin: invalid stages: stage 0: name "../../x" is not a plain name (1 to 64 letters, digits, '_', '-', '.', starting with a letter or digit)`) {
		t.Fatalf("err = %v", err)
	}
	for name, ok := range map[string]bool{"train": true, "peers": true, "stage-2.b_c": true, "": false, ".": false, "..": false, ".hidden": false, "a/b": false, `a\b`: false, strings.Repeat("a", 65): false, "é": false} {
		if sdk.ValidStageName(name) != ok {
			t.Errorf("ValidStageName(%q) = %v", name, !ok)
		}
	}
}

// kill -9 of the host leaves no plugin behind (parent-death signal), even
// when the goroutine that asked for the plugin ran on a thread that ended.
func TestPluginDiesWithItsHost(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "hang", 0o755)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	// A host killed with SIGKILL cannot remove its plugin's socket folder:
	// keep it in the test's own temporary folder.
	cmd.Env = append(os.Environ(), "LCL_TEST_PLUGIN_HOST="+dir, "TMPDIR="+t.TempDir())
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || pid <= 0 {
		t.Fatalf("helper host said %q (%v)", line, err)
	}
	if !alive(pid) {
		t.Fatalf("the plugin (pid %d) died with the thread that started it", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the plugin (pid %d) outlived its killed host", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, dead but not yet reaped by an
// init that may never reap it, does not).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(raw), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// FuzzParsePins: no lock file panics the parser; what it accepts writes
// back to the same pins.
func FuzzParsePins(f *testing.F) {
	f.Add("# x\nstrategy a 0000000000000000000000000000000000000000000000000000000000000000 /p/lcl-strategy-a\n")
	f.Add("similarity b ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff /with space/x\n")
	f.Add("strategy a nothex /x\n")
	f.Fuzz(func(t *testing.T, in string) {
		pins, err := parsePins(strings.NewReader(in), "lock")
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "lock")
		if err := WritePins(path, pins); err != nil {
			t.Fatal(err)
		}
		back, err := ReadPins(path)
		if err != nil || len(back) != len(pins) {
			t.Fatalf("round trip: %d pins, %v (from %d)", len(back), err, len(pins))
		}
		for k, p := range pins {
			if back[k] != p {
				t.Fatalf("round trip: %+v became %+v", p, back[k])
			}
		}
	})
}
