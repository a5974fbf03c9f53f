package experiment

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lcl-project/lcl/simstore"
)

// fakeLCL is an `lcl` stand-in for the emitted scripts: it records its
// arguments, one per line, and writes a result into its --out directory.
const fakeLCL = `#!/bin/sh
printf '%s\n' "$@" > "$ARGS_FILE"
out=
while [ $# -gt 0 ]; do
  if [ "$1" = --out ]; then out=$2; fi
  shift
done
printf '{"top1":[0.715],"top5":[0.9325]}\n' > "$out/result.json"
printf '{"epoch":1,"top1":[0.715]}\n' > "$out/metrics.jsonl"
`

func writeFake(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lcl")
	if err := os.WriteFile(path, []byte(fakeLCL), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTask runs an emitted task script for one index and returns the
// arguments the fake lcl received.
func runTask(t *testing.T, shell string, script []string, env []string) []string {
	t.Helper()
	argsFile := filepath.Join(t.TempDir(), "args")
	cmd := exec.Command(shell, script...)
	cmd.Env = append(append(os.Environ(), env...), "ARGS_FILE="+argsFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", shell, env, err, out)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("%v: fake lcl not called: %v\n%s", env, err, out)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func TestEmitSlurm(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := g.Expand()
	out := t.TempDir()
	em, err := Emit("slurm", g, runs, out, EmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	script := em.Files[0]
	if filepath.Base(script) != "lcl-small.sbatch" {
		t.Errorf("script %s", script)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(script)
	m := regexp.MustCompile(`(?m)^#SBATCH --array=(\d+)-(\d+)$`).FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatalf("no --array line in\n%s", raw)
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	if lo != 0 || hi-lo+1 != len(runs) {
		t.Errorf("array %d-%d for %d runs", lo, hi, len(runs))
	}
	if !strings.Contains(string(raw), "#SBATCH --cpus-per-task=2\n") {
		t.Error("threads not requested as cpus-per-task")
	}
	if !strings.Contains(string(raw), "#SBATCH --open-mode=append\n") {
		t.Error("a requeued task would truncate its log (no --open-mode=append)")
	}

	fake := writeFake(t)
	results := t.TempDir()
	for i, r := range runs {
		got := runTask(t, "bash", []string{script}, []string{"SLURM_ARRAY_TASK_ID=" + strconv.Itoa(i), "LCL=" + fake, "LCL_RESULTS=" + results})
		if want := append(trainArgs(t, r, "", false), "--out", filepath.Join(results, r.ID)); !slices.Equal(got, want) {
			t.Errorf("task %d:\n got %q\nwant %q", i, got, want)
		}
	}
	// A requeued task whose run has started resumes; a finished one is skipped.
	dir := filepath.Join(results, runs[0].ID)
	os.Remove(filepath.Join(dir, ResultFile))
	got := runTask(t, "bash", []string{script}, []string{"SLURM_ARRAY_TASK_ID=0", "LCL=" + fake, "LCL_RESULTS=" + results})
	if !slices.Equal(got, append(trainArgs(t, runs[0], "", false), "--out", dir, "--resume")) {
		t.Errorf("requeued task: %q", got)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+strconv.Itoa(len(runs)), "LCL="+fake, "LCL_RESULTS="+results)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no run with index") {
		t.Errorf("index past the end: %v %s", err, out)
	}

	// collect imports every finished run.
	store := memStore(t)
	s, err := Collect(context.Background(), results, store)
	if err != nil {
		t.Fatal(err)
	}
	if s.Imported != len(runs) || len(s.Unfinished) != 0 {
		t.Errorf("collect: %+v", s)
	}
	for _, r := range runs {
		rec, err := store.GetRun(context.Background(), r.ID)
		if err != nil || rec.Status != simstore.RunDone || rec.Top1[0] != 0.715 || rec.Top5[0] != 0.9325 {
			t.Errorf("%s: %+v %v", r.ID, rec, err)
		}
	}
}

func TestEmitKubernetes(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := g.Expand()
	em, err := Emit("kubernetes", g, runs, t.TempDir(), EmitOptions{Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(em.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Command []string `yaml:"command"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("manifest is not valid YAML: %v\n%s", err, raw)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" ||
		job.Spec.Completions != len(runs) || job.Spec.Parallelism != 4 || job.Spec.Template.Spec.RestartPolicy != "Never" {
		t.Fatalf("job %+v", job)
	}
	cmd := job.Spec.Template.Spec.Containers[0].Command
	if len(cmd) != 3 || cmd[0] != "/bin/sh" || cmd[1] != "-c" {
		t.Fatalf("command %q", cmd)
	}
	fake := writeFake(t)
	results := t.TempDir()
	for i, r := range runs {
		got := runTask(t, "sh", []string{"-c", cmd[2]}, []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(i), "LCL=" + fake, "LCL_RESULTS=" + results})
		if want := append(trainArgs(t, r, "", false), "--out", filepath.Join(results, r.ID)); !slices.Equal(got, want) {
			t.Errorf("index %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

func TestCollectReportsUnfinished(t *testing.T) {
	runs := smallRuns(t)[:2]
	root := t.TempDir()
	for i, r := range runs {
		dir := RunDir(root, r.ID)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, ConfigFile), mustJSON(r.Config), 0o644)
		if i == 0 {
			os.WriteFile(filepath.Join(dir, ResultFile), []byte(`{"top1": 0.6, "top5": 0.8}`), 0o644)
		}
	}
	s, err := Collect(context.Background(), root, memStore(t))
	if err != nil || s.Imported != 1 || !slices.Equal(s.Unfinished, []string{runs[1].ID}) {
		t.Fatalf("%+v %v", s, err)
	}
	// A directory whose name is not its config's digest is refused.
	os.Rename(RunDir(root, runs[0].ID), filepath.Join(root, "renamed"))
	if _, err := Collect(context.Background(), root, memStore(t)); err == nil || !strings.Contains(err.Error(), "not the digest") {
		t.Fatalf("err %v", err)
	}
}

// A results path with shell syntax in it stays a path in the emitted
// scripts (issue 23, item 17: --out 'o$(touch PWNED)' ran the command),
// and one with a newline, which no quoting carries into an #SBATCH line,
// is refused.
func TestEmitQuotesPaths(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := g.Expand()[:1]
	work := t.TempDir()
	out := filepath.Join(work, `o$(touch PWNED) it's`)
	em, err := Emit("slurm", g, runs, out, EmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fake := writeFake(t)
	for _, shell := range []string{"bash", "sh"} {
		argsFile := filepath.Join(t.TempDir(), "args")
		cmd := exec.Command(shell, em.Files[0])
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=0", "LCL="+fake, "ARGS_FILE="+argsFile)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", shell, err, b)
		}
		if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
			t.Fatalf("%s ran the command substitution in the results path", shell)
		}
		raw, _ := os.ReadFile(argsFile)
		want := "--out\n" + filepath.Join(out, "runs", runs[0].ID) + "\n"
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s: the run's arguments %q lack %q", shell, raw, want)
		}
		os.RemoveAll(filepath.Join(out, "runs", runs[0].ID))
	}
	raw, _ := os.ReadFile(em.Files[0])
	if !strings.Contains(string(raw), "#SBATCH --output=\""+filepath.Join(out, "runs")+"/lcl-small-%A_%a.log\"\n") {
		t.Errorf("the #SBATCH --output line does not quote the path:\n%s", raw)
	}
	for _, o := range []EmitOptions{{Results: "/r\n#SBATCH --wrap=x"}, {LCL: "lcl\ntouch x"}} {
		if _, err := Emit("slurm", g, runs, t.TempDir(), o); err == nil || !strings.Contains(err.Error(), "control character") {
			t.Errorf("%+v: %v, want a refusal", o, err)
		}
	}
	if _, err := Emit("kubernetes", g, runs, filepath.Join(t.TempDir(), "a\nb"), EmitOptions{}); err == nil {
		t.Error("an --out with a newline was accepted")
	}
	// Kubernetes: the same script body, through /bin/sh -c.
	em, err = Emit("kubernetes", g, runs, t.TempDir(), EmitOptions{Results: filepath.Join(work, "r$(touch PWNED2)")})
	if err != nil {
		t.Fatal(err)
	}
	var job k8sJob
	b, _ := os.ReadFile(em.Files[0])
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, "r$(touch PWNED2)"), 0o755)
	got := runTask(t, "sh", []string{"-c", job.Spec.Template.Spec.Containers[0].Command[2]}, []string{"JOB_COMPLETION_INDEX=0", "LCL=" + fake})
	if _, err := os.Stat("PWNED2"); err == nil {
		os.Remove("PWNED2")
		t.Fatal("sh ran the command substitution in the results path")
	}
	if !slices.Contains(got, filepath.Join(work, "r$(touch PWNED2)", runs[0].ID)) {
		t.Errorf("kubernetes task arguments %q", got)
	}
}

// Accuracies that are not fractions are refused on import, naming the
// file (issue 23, item 16: top1 7.5 was imported and reported as 750 %).
func TestCollectRefusesAccuraciesOutOfRange(t *testing.T) {
	for _, c := range []struct{ result, metrics, want string }{
		{`{"top1": 7.5}`, "", "top1[0] = 7.5: want a fraction in [0, 1]"},
		{`{"top1": [0.5, -0.1]}`, "", "top1[1] = -0.1: want a fraction"},
		{`{"top1": 0.5, "top5": 0.4}`, "", "top5[0] = 0.4 is below top1[0] = 0.5"},
		{`{"top1": [0.5, 0.6], "top5": [0.9]}`, "", "1 top5 values for 2 top1 values"},
		{`{"top1": 0.5}`, "{\"epoch\":1,\"top1\":[75]}\n", "metrics.jsonl:1: accuracy 75: want a fraction"},
	} {
		runs := smallRuns(t)[:1]
		root := t.TempDir()
		dir := RunDir(root, runs[0].ID)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, ConfigFile), mustJSON(runs[0].Config), 0o644)
		os.WriteFile(filepath.Join(dir, ResultFile), []byte(c.result), 0o644)
		if c.metrics != "" {
			os.WriteFile(filepath.Join(dir, MetricsFile), []byte(c.metrics), 0o644)
		}
		store := memStore(t)
		s, err := Collect(context.Background(), root, store)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) || s.Imported != 0 {
			t.Errorf("%s: %+v, %v; want an error naming %s and saying %q", c.result, s, err, dir, c.want)
		}
		if _, err := store.GetRun(context.Background(), runs[0].ID); err == nil {
			t.Errorf("%s: the run was stored", c.result)
		}
	}
}

// A target Emit does not know is refused before the output folder is made.
func TestEmitUnknownTargetWritesNothing(t *testing.T) {
	g, err := Load("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "jobs")
	if _, err := Emit("pbs", g, g.Expand()[:1], out, EmitOptions{}); err == nil || !strings.Contains(err.Error(), `unknown target "pbs"`) {
		t.Fatalf("Emit(pbs) = %v, want the unknown target named", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("refused Emit left %s behind (stat: %v)", out, err)
	}
}
