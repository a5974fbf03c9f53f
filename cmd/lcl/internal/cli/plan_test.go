package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcl-project/lcl/internal/npy"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/strategy"
	"github.com/lcl-project/lcl/simstore"
)

// Built-in plugins are served by re-executing lcl as `lcl plugins serve KIND
// NAME`; in tests that executable is this test binary, which then serves
// instead of testing.
func init() {
	if os.Getenv("LCL_PLUGIN_MAGIC_COOKIE") != "" && len(os.Args) == 5 && os.Args[1] == "plugins" && os.Args[2] == "serve" {
		os.Exit(Main(os.Args[1:]))
	}
}

func readNpy(t *testing.T, path string) (int, int, []float64) {
	t.Helper()
	r, c, d, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return r, c, d
}

func TestPlanLCLFromStore(t *testing.T) {
	needWordNet(t)
	set, err := labels.Builtin("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	c := len(set.Classes)
	storeDir := t.TempDir()
	st, err := simstore.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	m := simstore.Matrix{LabelSet: set.Name, Kind: "semantic", Data: make([]float32, c*c)}
	sim := sdk.NewMatrix(c, c)
	for i, a := range set.Classes {
		m.Classes = append(m.Classes, a.ID)
		for j := range set.Classes {
			v := float32(1)
			if i != j {
				v = float32((i+2*j)%7) / 10
			}
			m.Data[i*c+j] = v
			sim.Set(i, j, v)
		}
	}
	key, err := st.PutMatrix(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := t.TempDir()
	r := cliRun(t, "--store", storeDir, "plan", "--strategy", "lcl", "--epsilon", "0.9", "--synsets", "fashion-mnist",
		"--source", "semantic", "--epochs", "5", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	v0 := strategy.LCLInitial(strategy.Float64(sim))
	for e := 0; e < 5; e++ {
		rows, cols, got := readNpy(t, filepath.Join(out, "epoch-00"+string(rune('0'+e))+".npy"))
		want := strategy.LCLTargets(v0, 0.9, e)
		if rows != c || cols != c {
			t.Fatalf("epoch %d: %d×%d", e, rows, cols)
		}
		for i := range got {
			if math.Abs(got[i]-want.Data[i]) > 1e-6 {
				t.Fatalf("epoch %d value %d: %g, want %g", e, i, got[i], want.Data[i])
			}
		}
	}
	csv, err := os.ReadFile(filepath.Join(out, "curriculum.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "stage,stage_name,epoch,mean_entropy,mean_true_mass") || !strings.HasPrefix(lines[1], "0,train,0,") {
		t.Fatalf("curriculum.csv:\n%s", csv)
	}
	png, err := os.ReadFile(filepath.Join(out, "curriculum.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("curriculum.png: %v", err)
	}
	if !strings.Contains(r.out, "lcl: 5 target matrices (10 classes)") {
		t.Fatalf("summary: %q", r.out)
	}

	// The same matrix by its store key.
	out2 := t.TempDir()
	r = cliRun(t, "--store", storeDir, "plan", "--epsilon", "0.9", "--synsets", "fashion-mnist", "--similarity-key", key, "--epochs", "2", "--out", out2)
	if r.code != 0 || !strings.Contains(r.err, "similarity from store fashion-mnist/semantic") {
		t.Fatalf("--similarity-key: exit %d: %s", r.code, r.err)
	}
	_, _, a := readNpy(t, filepath.Join(out, "epoch-001.npy"))
	_, _, b := readNpy(t, filepath.Join(out2, "epoch-001.npy"))
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("--similarity-key plan differs at %d", i)
		}
	}
}

func writeWorkedExample(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sim.npy")
	if err := npy.WriteFile(path, 3, 3, []float64{1, 0.5, 0.5, 0.2, 1, 0.6, 0, 0.25, 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlanMatrixFile(t *testing.T) {
	lclServesPlugins(t) // the strategy plugin as lcl starts it: lcl itself, re-executed
	out := t.TempDir()
	r := cliRun(t, "--json", "plan", "--strategy", "lcl", "--param", "epsilon=0.5", "--matrix", writeWorkedExample(t), "--epochs", "3", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	// The worked example of plugins/strategy: epoch 2, row 1 = [1/48, 11/12, 1/16].
	_, _, got := readNpy(t, filepath.Join(out, "epoch-002.npy"))
	for j, w := range []float64{1. / 48, 11. / 12, 1. / 16} { // float32 targets
		if math.Abs(got[3+j]-w) > 1e-7 {
			t.Fatalf("row 1 = %v", got[3:6])
		}
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(r.out), &summary); err != nil || summary["message_type"] != "summary" || summary["matrices"] != 3.0 {
		t.Fatalf("json summary %q: %v", r.out, err)
	}
}

// lcl plan --strategy mbm-soft on the worked example's matrix, by hand:
// d = 1 − s = [[0, .5, .5], [.8, 0, .4], [1, .75, 0]], max d = 1, so at
// β = 2 row c is exp(−2·d_c) normalised, the same every epoch.
func TestPlanMBMSoft(t *testing.T) {
	out := t.TempDir()
	r := cliRun(t, "plan", "--strategy", "mbm-soft", "--param", "beta=2", "--matrix", writeWorkedExample(t), "--epochs", "2", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var want []float64
	for _, d := range [][]float64{{0, 0.5, 0.5}, {0.8, 0, 0.4}, {1, 0.75, 0}} {
		sum := 0.0
		for _, x := range d {
			sum += math.Exp(-2 * x)
		}
		for _, x := range d {
			want = append(want, math.Exp(-2*x)/sum)
		}
	}
	for _, f := range []string{"epoch-000.npy", "epoch-001.npy"} {
		_, _, got := readNpy(t, filepath.Join(out, f))
		for i, w := range want {
			if math.Abs(got[i]-w) > 1e-7 { // float32 targets
				t.Fatalf("%s = %v, want %v", f, got, want)
			}
		}
	}
}

func TestPlanStages(t *testing.T) {
	out := t.TempDir()
	r := cliRun(t, "plan", "--strategy", "kd", "--matrix", writeWorkedExample(t), "--epochs", "2", "--out", out)
	if r.code != 0 {
		t.Fatalf("kd: exit %d: %s", r.code, r.err)
	}
	for _, f := range []string{"teacher/epoch-000.npy", "teacher/epoch-001.npy", "student/epoch-001.npy"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(out, "curriculum.csv"))
	if !strings.Contains(string(csv), "1,student,1,0,1,0.1,0,0.9,4,0") {
		t.Fatalf("kd student coefficients missing:\n%s", csv)
	}

	out = t.TempDir()
	r = cliRun(t, "plan", "--strategy", "cn", "--matrix", writeWorkedExample(t), "--epochs", "2", "--out", out)
	if r.code != 0 || !strings.Contains(r.err, `stage "curriculum" needs the features of a model trained in stage "pretrain"`) {
		t.Fatalf("cn: exit %d: %s", r.code, r.err)
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		// Parameters are usage errors, found before the similarity.
		{"misspelt param", []string{"--param", "epsilom=0.9"}, 2, `--param epsilom=0.9: strategy lcl takes epsilon, per-step, clip-negative; did you mean epsilon?`},
		{"bad epsilon", []string{"--epsilon", "1.5"}, 2, `strategy lcl refuses its parameters (epsilon=1.5): strategy plugin "lcl" (built-in): Begin: epsilon = 1.5, want a value in (0,1]`},
		{"bad epsilon, no similarity yet", []string{"--epsilon", "1.5", "--matrix", "", "--synsets", "fashion-mnist", "--source", "nothing-stored"}, 2,
			`Begin: epsilon = 1.5, want a value in (0,1]`},
		{"unknown strategy", []string{"--strategy", "nope"}, 2, `unknown strategy plugin "nope"`},
		{"bad param syntax", []string{"--param", "epsilon"}, 2, `want NAME=VALUE`},
	}
	for _, tt := range tests {
		args := append([]string{"plan", "--matrix", writeWorkedExample(t), "--epochs", "2", "--out", t.TempDir()}, tt.args...)
		r := cliRun(t, args...)
		lines := strings.Split(strings.TrimSpace(r.err), "\n")
		last := lines[len(lines)-1] // notes may come first; the error is one line
		if r.code != tt.code || !strings.HasPrefix(last, "lcl: ") || !strings.Contains(last, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tt.name, r.code, r.err, tt.code, tt.want)
		}
	}

	needWordNet(t)
	// A misspelt source: neither a stored matrix nor a plugin, and the
	// nearest name.
	if r := cliRun(t, "--store", t.TempDir(), "plan", "--synsets", "fashion-mnist", "--source", "semantik", "--out", t.TempDir()); r.code != 1 ||
		!strings.Contains(r.err, `no "semantik" similarity matrix for fashion-mnist`) || !strings.Contains(r.err, "did you mean semantic?") {
		t.Errorf("misspelt source: exit %d: %s", r.code, r.err)
	}
	// (No semantic matrix or vectors in the store: the run embeds the
	// classes first, TestEmbedReusesCorpusModel.) Visual similarity of a
	// set without attributes: lcl similarity makes it from a file (a flag
	// plan and train do not have).
	r := cliRun(t, "--store", t.TempDir(), "plan", "--synsets", "fashion-mnist", "--source", "visual", "--out", t.TempDir())
	if r.code != 1 || !strings.Contains(r.err, "label set fashion-mnist has no built-in attributes: make its visual similarity with `lcl similarity --synsets fashion-mnist --source visual --attributes FILE` first") {
		t.Fatalf("visual without attributes: exit %d: %s", r.code, r.err)
	}
}

func TestPluginsListCommand(t *testing.T) {
	t.Setenv("LCL_PLUGIN_PATH", t.TempDir())
	r := cliRun(t, "--json", "plugins", "list")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
		var d struct {
			MessageType, Kind, Name, Version, Path, Error string `json:",omitempty"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		seen[d.Kind+"/"+d.Name] = true
	}
	for _, want := range []string{"strategy/sl", "strategy/ls", "strategy/lcl", "strategy/kd", "strategy/dml", "strategy/cn",
		"similarity/semantic", "similarity/visual", "similarity/simrank", "similarity/lca", "similarity/matrix"} {
		if !seen[want] {
			t.Errorf("%s not listed:\n%s", want, r.out)
		}
	}
	r = cliRun(t, "plugins", "list")
	found := false
	for _, line := range strings.Split(r.out, "\n") {
		f := strings.Fields(line)
		found = found || strings.Join(f, " ") == "strategy lcl 1.0.0 built-in epsilon=0.99 per-step=false clip-negative=false"
	}
	if r.code != 0 || !found {
		t.Fatalf("table:\n%s%s", r.out, r.err)
	}
}

// With no matrix in the store, --source names a built-in similarity source
// served as a plugin: visual computes AwA2's attribute cosines.
func TestPlanSourcePlugin(t *testing.T) {
	needWordNet(t)
	lclServesPlugins(t) // the similarity plugin as lcl starts it: lcl itself, re-executed
	out := t.TempDir()
	r := cliRun(t, "--store", t.TempDir(), "plan", "--strategy", "lcl", "--synsets", "awa2", "--source", "visual", "--epochs", "2", "--out", out)
	if r.code != 0 || !strings.Contains(r.err, `similarity from similarity plugin "visual" (built-in)`) {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	rows, cols, v0 := readNpy(t, filepath.Join(out, "epoch-000.npy"))
	if rows != 50 || cols != 50 {
		t.Fatalf("%d×%d", rows, cols)
	}
	for i := 0; i < 50; i++ {
		sum := 0.0
		for j := 0; j < 50; j++ {
			sum += v0[i*50+j]
			if v0[i*50+j] > v0[i*50+i] {
				t.Fatalf("row %d: v[%d] = %g above the true class %g", i, j, v0[i*50+j], v0[i*50+i])
			}
		}
		if math.Abs(sum-1) > 1e-6 { // float32 targets (sdk.RowSumTolerance)
			t.Fatalf("row %d sums to %g", i, sum)
		}
	}
}
