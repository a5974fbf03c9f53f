package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lcl-project/lcl/simstore"
)

// EmitOptions configure the cluster files.
type EmitOptions struct {
	// Name is the job name (default: lcl-<grid name>).
	Name string
	// Results is the shared results folder as the jobs see it; each run writes
	// Results/<id>/. Slurm default: OUT/runs (absolute); Kubernetes default:
	// /results, the mount point of the PVC.
	Results string
	// LCL is the lcl binary on the cluster (default "lcl", found on PATH).
	LCL string
	// Parallel caps how many runs execute at once (0: no cap for Slurm,
	// all runs for Kubernetes).
	Parallel int
	// Image is the container image for Kubernetes (default lcl:latest).
	Image string
	// PVC is the PersistentVolumeClaim mounted at Results for Kubernetes (default lcl-results).
	PVC string
}

// Emitted names the files Emit wrote.
type Emitted struct {
	Files []string
	Runs  int
}

// Emit writes the cluster job files for runs into out: for "slurm" a job
// array script (lcl-<name>.sbatch), for "kubernetes" an indexed Job manifest
// (lcl-<name>.yaml); for both runs.json listing index → id and configuration.
func Emit(target string, g *Grid, runs []Run, out string, opt EmitOptions) (Emitted, error) {
	switch {
	case len(runs) == 0:
		return Emitted{}, fmt.Errorf("emit: the grid has no runs")
	case target != "slurm" && target != "kubernetes": // refused before out is made
		return Emitted{}, fmt.Errorf("emit: unknown target %q (expected slurm or kubernetes)", target)
	}
	if opt.Name == "" {
		opt.Name = "lcl-" + g.Name
	}
	opt.Name = dnsName(opt.Name)
	if opt.LCL == "" {
		opt.LCL = "lcl"
	}
	for _, v := range []struct{ flag, value string }{{"--out", out}, {"--results", opt.Results}, {"--lcl", opt.LCL}} {
		if err := scriptSafe(v.value); err != nil {
			return Emitted{}, fmt.Errorf("emit: %s %q: %w", v.flag, v.value, err)
		}
	}
	// Every run's command line before anything is written.
	argv := make([][]string, len(runs))
	for i, r := range runs {
		var err error
		if argv[i], err = r.TrainArgs("", false); err != nil {
			return Emitted{}, fmt.Errorf("emit: %w", err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Emitted{}, err
	}
	var path string
	var data []byte
	switch target {
	case "slurm":
		if opt.Results == "" {
			abs, err := filepath.Abs(filepath.Join(out, "runs"))
			if err != nil {
				return Emitted{}, err
			}
			opt.Results = abs
			if err := scriptSafe(abs); err != nil {
				return Emitted{}, fmt.Errorf("emit: results folder %q: %w", abs, err)
			}
			// Slurm opens --output before the task runs: the folder must exist.
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return Emitted{}, err
			}
		}
		path = filepath.Join(out, opt.Name+".sbatch")
		data = []byte(slurmScript(g, runs, argv, opt))
	case "kubernetes":
		if opt.Results == "" {
			opt.Results = "/results"
		}
		if opt.Image == "" {
			opt.Image = "lcl:latest"
		}
		if opt.PVC == "" {
			opt.PVC = "lcl-results"
		}
		var err error
		if data, err = kubernetesJob(g, runs, argv, opt); err != nil {
			return Emitted{}, err
		}
		path = filepath.Join(out, opt.Name+".yaml")
	default:
		return Emitted{}, fmt.Errorf("emit: unknown target %q (expected slurm or kubernetes)", target)
	}
	mode := os.FileMode(0o644)
	if target == "slurm" {
		mode = 0o755
	}
	if err := writeFileAtomic(path, data); err != nil {
		return Emitted{}, err
	}
	if err := os.Chmod(path, mode); err != nil {
		return Emitted{}, err
	}
	mpath, err := writeRunList(out, runs)
	if err != nil {
		return Emitted{}, err
	}
	return Emitted{Files: []string{path, mpath}, Runs: len(runs)}, nil
}

// writeRunList writes out/runs.json: each run's index, id and
// configuration, and returns its path.
func writeRunList(out string, runs []Run) (string, error) {
	type entry struct {
		Index  int                `json:"index"`
		ID     string             `json:"id"`
		Config simstore.RunConfig `json:"config"`
	}
	list := make([]entry, len(runs))
	for i, r := range runs {
		list[i] = entry{i, r.ID, r.Config}
	}
	manifest, _ := json.MarshalIndent(list, "", "  ")
	path := filepath.Join(out, "runs.json")
	return path, writeFileAtomic(path, append(manifest, '\n'))
}

// taskScript is the POSIX shell body shared by both targets: it picks the
// run by index, skips a finished run, resumes a started one, and records the
// configuration next to the results so that `lcl experiment collect` can
// import the directory without the grid file.
func taskScript(runs []Run, argv [][]string, indexVar string, opt EmitOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set -eu\n")
	// Unquoted ${VAR:-WORD} in an assignment: WORD's own quotes hold (no
	// field splitting happens in an assignment), so a path such as
	// o$(touch x) stays a path.
	fmt.Fprintf(&b, "LCL=${LCL:-%s}\n", shellQuote(opt.LCL))
	fmt.Fprintf(&b, "RESULTS=${LCL_RESULTS:-%s}\n", shellQuote(opt.Results))
	fmt.Fprintf(&b, "case \"$%s\" in\n", indexVar)
	for i, r := range runs {
		args := argv[i] // no --out: the directory is added below
		cfg := string(mustJSON(r.Config))
		fmt.Fprintf(&b, "%d) id=%s; config=%s\n   set -- %s ;;\n", i, r.ID, shellQuote(cfg), shellJoin(args))
	}
	fmt.Fprintf(&b, "*) echo \"lcl: no run with index $%s (this job has %d: 0-%d)\" >&2; exit 2 ;;\n", indexVar, len(runs), len(runs)-1)
	b.WriteString("esac\n")
	b.WriteString(`dir="$RESULTS/$id"
if [ -e "$dir/` + ResultFile + `" ]; then echo "lcl: $id is already done"; exit 0; fi
resume=
if [ -d "$dir" ] && [ -n "$(ls -A "$dir" | grep -v -x -e ` + ConfigFile + ` -e lcl-train.log || true)" ]; then resume=--resume; fi
mkdir -p "$dir"
printf '%s\n' "$config" > "$dir/` + ConfigFile + `"
echo "lcl: run $id: $LCL $* --out $dir $resume"
exec "$LCL" "$@" --out "$dir" $resume
`)
	return b.String()
}

func slurmScript(g *Grid, runs []Run, argv [][]string, opt EmitOptions) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# Slurm job array for grid %q: %d runs, one array task each.\n", g.Name, len(runs))
	b.WriteString("# Written by `lcl experiment emit --to slurm`; submit with `sbatch` (add -p/-A/--time as your site needs).\n")
	b.WriteString("# Results land in $LCL_RESULTS/<run id>/; import them with `lcl experiment collect $LCL_RESULTS`.\n")
	fmt.Fprintf(&b, "# The task logs go to %s, which must exist on the nodes (Slurm does not create it).\n", shellQuote(opt.Results))
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", opt.Name)
	array := fmt.Sprintf("0-%d", len(runs)-1)
	if opt.Parallel > 0 {
		array += fmt.Sprintf("%%%d", opt.Parallel)
	}
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", sbatchQuote(opt.Results+"/"+opt.Name+"-%A_%a.log"))
	b.WriteString("#SBATCH --ntasks=1\n")
	if g.Threads > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", g.Threads)
	}
	if strings.HasPrefix(g.Device, "cuda") {
		fmt.Fprintf(&b, "#SBATCH --gres=gpu:%d\n", max(g.NProc, 1))
	}
	// A requeued task writes to the same log: append, so that the log
	// keeps the attempt Slurm stopped (Slurm truncates it by default).
	b.WriteString("#SBATCH --requeue\n#SBATCH --open-mode=append\n\n")
	b.WriteString(taskScript(runs, argv, "SLURM_ARRAY_TASK_ID", opt))
	return b.String()
}

// k8s manifest types: only the fields lcl writes.
type (
	k8sJob struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		Spec       k8sSpec `yaml:"spec"`
	}
	k8sMeta struct {
		Name   string            `yaml:"name,omitempty"`
		Labels map[string]string `yaml:"labels,omitempty"`
	}
	k8sSpec struct {
		CompletionMode string      `yaml:"completionMode"`
		Completions    int         `yaml:"completions"`
		Parallelism    int         `yaml:"parallelism"`
		BackoffLimit   int         `yaml:"backoffLimit"`
		Template       k8sTemplate `yaml:"template"`
	}
	k8sTemplate struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy string         `yaml:"restartPolicy"`
		Containers    []k8sContainer `yaml:"containers"`
		Volumes       []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name         string         `yaml:"name"`
		Image        string         `yaml:"image"`
		Command      []string       `yaml:"command"`
		Resources    *k8sResources  `yaml:"resources,omitempty"`
		VolumeMounts []k8sMountSpec `yaml:"volumeMounts"`
	}
	k8sResources struct {
		Limits map[string]string `yaml:"limits"`
	}
	k8sMountSpec struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name string       `yaml:"name"`
		PVC  k8sClaimSpec `yaml:"persistentVolumeClaim"`
	}
	k8sClaimSpec struct {
		ClaimName string `yaml:"claimName"`
	}
)

func kubernetesJob(g *Grid, runs []Run, argv [][]string, opt EmitOptions) ([]byte, error) {
	par := opt.Parallel
	if par <= 0 || par > len(runs) {
		par = len(runs)
	}
	labels := map[string]string{"app.kubernetes.io/name": "lcl", "lcl/grid": dnsName(g.Name)}
	c := k8sContainer{
		Name:         "lcl",
		Image:        opt.Image,
		Command:      []string{"/bin/sh", "-c", taskScript(runs, argv, "JOB_COMPLETION_INDEX", opt)},
		VolumeMounts: []k8sMountSpec{{Name: "results", MountPath: opt.Results}},
	}
	limits := map[string]string{}
	if g.Threads > 0 {
		limits["cpu"] = fmt.Sprint(g.Threads)
	}
	if strings.HasPrefix(g.Device, "cuda") {
		limits["nvidia.com/gpu"] = fmt.Sprint(max(g.NProc, 1))
	}
	if len(limits) > 0 {
		c.Resources = &k8sResources{Limits: limits}
	}
	job := k8sJob{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata:   k8sMeta{Name: opt.Name, Labels: labels},
		Spec: k8sSpec{
			CompletionMode: "Indexed",
			Completions:    len(runs),
			Parallelism:    par,
			BackoffLimit:   2 * len(runs),
			Template: k8sTemplate{
				Metadata: k8sMeta{Labels: labels},
				Spec: k8sPodSpec{
					RestartPolicy: "Never",
					Containers:    []k8sContainer{c},
					Volumes:       []k8sVolume{{Name: "results", PVC: k8sClaimSpec{ClaimName: opt.PVC}}},
				},
			},
		},
	}
	var body bytes.Buffer
	enc := yaml.NewEncoder(&body)
	enc.SetIndent(2)
	if err := enc.Encode(job); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# Kubernetes indexed Job for grid %q: %d runs, one completion index each.\n"+
		"# Written by `lcl experiment emit --to kubernetes`; apply with `kubectl apply -f`.\n"+
		"# The image must contain lcl and the data; results go to the PVC %q mounted at %s.\n",
		g.Name, len(runs), opt.PVC, opt.Results)
	return append([]byte(head), body.Bytes()...), nil
}

// CollectSummary says what Collect found.
type CollectSummary struct {
	Imported   int
	Unfinished []string // ids of runs without a result yet
}

// Collect imports every finished run found under dir (run directories that
// hold ConfigFile, at any depth) into results. Runs without a result are
// listed, not imported.
func Collect(ctx context.Context, dir string, results Results) (CollectSummary, error) {
	var s CollectSummary
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("collect: %s: no such folder (want the folder the cluster's runs wrote their run directories in)", dir)
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == ConfigFile {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("collect: %w", err)
	}
	if len(dirs) == 0 {
		return s, fmt.Errorf("collect: no run directories (with %s) under %s", ConfigFile, dir)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		raw, err := os.ReadFile(filepath.Join(d, ConfigFile))
		if err != nil {
			return s, err
		}
		var c simstore.RunConfig
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return s, fmt.Errorf("%s: %w", filepath.Join(d, ConfigFile), err)
		}
		run := Run{ID: c.ID(), Config: c}
		if base := filepath.Base(d); base != run.ID {
			return s, fmt.Errorf("%s: the directory name %s is not the digest %s of its %s", d, base, run.ID, ConfigFile)
		}
		rec, err := ReadResult(run.Config, d)
		if errors.Is(err, ErrNoResult) {
			s.Unfinished = append(s.Unfinished, run.ID)
			continue
		}
		if err != nil {
			return s, err
		}
		abs, err := filepath.Abs(d)
		if err == nil {
			rec.Dir = abs
		}
		if err := results.PutRun(ctx, rec); err != nil {
			return s, err
		}
		s.Imported++
	}
	return s, nil
}

// scriptSafe refuses what no quoting carries safely into a job script: a
// control character (a newline would end an #SBATCH or comment line and
// start a command), and a double quote (Slurm's #SBATCH lines have no
// escape for one).
func scriptSafe(s string) error {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return errors.New("a control character (such as a newline) cannot go into a job script")
		}
		if r == '"' {
			return errors.New("a double quote cannot go into a Slurm #SBATCH line")
		}
	}
	return nil
}

// sbatchQuote writes an #SBATCH option value: in double quotes when it
// holds a space or a quote (sbatch splits option lines on blanks and
// honours double quotes; scriptSafe has refused '"' itself).
func sbatchQuote(s string) string {
	if strings.ContainsAny(s, " \t'") {
		return `"` + s + `"`
	}
	return s
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for POSIX sh.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName turns s into a valid Kubernetes name (RFC 1123 label).
func dnsName(s string) string {
	s = strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if s == "" {
		s = "lcl"
	}
	return s
}
