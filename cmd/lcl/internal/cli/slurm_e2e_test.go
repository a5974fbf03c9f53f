//go:build e2e

package cli

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/testdep"
	"github.com/lcl-project/lcl/trainer"
)

// slurmCluster starts a one-machine Slurm cluster in dir: munged with its
// own key and socket, slurmctld and slurmd on free ports, this machine as
// the only node (its CPUs, one partition). It returns the environment the
// Slurm commands need (SLURM_CONF); everything is stopped at the end.
func slurmCluster(t *testing.T, dir string) []string {
	t.Helper()
	testdep.Program(t, "munged")
	testdep.Program(t, "slurmctld")
	testdep.Program(t, "slurmd")
	testdep.Program(t, "sbatch")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".") // slurmd names its node by the short host name
	munge := filepath.Join(dir, "munge")
	keys := filepath.Join(dir, "munge-key")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{munge, 0o755}, {keys, 0o700}, {filepath.Join(dir, "state"), 0o755}, {filepath.Join(dir, "spool"), 0o755}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(keys, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(munge, "munge.socket")
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	conf := filepath.Join(dir, "slurm.conf")
	err = os.WriteFile(conf, []byte(fmt.Sprintf(`# A one-machine cluster for lcl's end-to-end test.
ClusterName=lcltest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire is also how long a requeued job waits before it starts again (default 120 s).
AuthInfo=socket=%[4]s,cred_expire=10
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=lcl Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP
`, host, ports[0], ports[1], socket, dir, runtime.NumCPU())), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SLURM_CONF="+conf)

	var daemons []*daemon
	t.Cleanup(func() {
		runFor(30*time.Second, env, "scancel", "--partition", "lcl")
		for i := len(daemons) - 1; i >= 0; i-- {
			out := daemons[i].stop()
			if t.Failed() {
				t.Logf("%s's output ends:\n%s", daemons[i].name, out)
			}
		}
	})
	start := func(name string, args ...string) *daemon {
		d := startDaemon(t, dir, env, name, args...)
		daemons = append(daemons, d)
		return d
	}
	md := start("munged", "--foreground", "--key-file="+filepath.Join(keys, "munge.key"), "--socket="+socket,
		"--pid-file="+filepath.Join(munge, "munged.pid"), "--seed-file="+filepath.Join(keys, "munged.seed"),
		"--log-file="+filepath.Join(munge, "munged.log"))
	if !waitFor(30*time.Second, func() bool { _, err := os.Stat(socket); return err == nil || !md.running() }) || !md.running() {
		t.Fatalf("munged did not start:\n%s", md.stop())
	}
	ctld := start("slurmctld", "-D", "-i")
	slurmd := start("slurmd", "-D")
	var state string
	if !waitFor(60*time.Second, func() bool {
		state, _ = runFor(10*time.Second, env, "sinfo", "--noheader", "--Node", "--format=%T")
		return state == "idle" || !ctld.running() || !slurmd.running()
	}) || state != "idle" {
		t.Fatalf("the node did not become idle (sinfo: %q)", state)
	}
	return env
}

// TestSlurmJobArray: the Slurm job array `lcl experiment emit --to slurm`
// writes for a 2-run grid (SL and LS, the small CNN, 1 epoch on 1 % of
// Fashion-MNIST) runs on a real one-machine Slurm cluster (munge, slurmctld,
// slurmd), one array task per run; `lcl experiment collect` imports both
// results and `lcl report` shows their accuracies. Submitted again, every
// task finds its run done and trains nothing. Requeued by Slurm while it
// trains (in a fresh results folder), a task checkpoints on Slurm's SIGTERM,
// resumes when it runs again and ends with the uninterrupted run's metrics;
// its log keeps both attempts.
func TestSlurmJobArray(t *testing.T) {
	needRoot(t, "starts munged, slurmctld and slurmd")
	const data = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("Fashion-MNIST missing (%v): run `make deps`", err)
	}
	dir := worldReadableTemp(t, "lcl-slurm-")
	bin := buildLCL(t, dir)
	env := slurmCluster(t, dir)

	grid := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(grid, []byte(`name: two
labels: fashion-mnist
data: `+data+`
models: [cnn]
fractions: [0.01]
epochs: 1
seeds: [1]
threads: 1
device: cpu
strategies:
  - name: sl
  - name: ls
`), 0o644); err != nil {
		t.Fatal(err)
	}
	lcl := func(args ...string) string {
		t.Helper()
		out, err := runFor(5*time.Minute, os.Environ(), bin, append([]string{"--store", filepath.Join(dir, "store")}, args...)...)
		if err != nil {
			t.Fatalf("lcl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	cluster := filepath.Join(dir, "cluster")
	lcl("experiment", "emit", "--to", "slurm", grid, "--out", cluster, "--lcl", bin)
	script := filepath.Join(cluster, "lcl-two.sbatch")
	var runs []struct {
		Index int    `json:"index"`
		ID    string `json:"id"`
	}
	if b, err := os.ReadFile(filepath.Join(cluster, "runs.json")); err != nil || json.Unmarshal(b, &runs) != nil || len(runs) != 2 {
		t.Fatalf("runs.json: %v %s", err, b)
	}
	results := filepath.Join(cluster, "runs")

	// submit runs the job array to its end and returns the job id and each
	// task's log.
	submit := func() (string, [2]string) {
		t.Helper()
		out, err := runFor(10*time.Minute, env, "sbatch", "--wait", "--parsable", script)
		if err != nil {
			t.Fatalf("sbatch --wait: %v\n%s", err, out)
		}
		job := strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:])
		var logs [2]string
		for i := range logs {
			b, err := os.ReadFile(filepath.Join(results, fmt.Sprintf("lcl-two-%s_%d.log", job, i)))
			if err != nil {
				t.Fatalf("task %d of job %s: %v", i, job, err)
			}
			logs[i] = string(b)
		}
		return job, logs
	}
	job, logs := submit()
	top1 := make([]float64, 2)
	stamps := make([]time.Time, 2)
	for i, r := range runs {
		if !strings.Contains(logs[r.Index], "lcl: run "+r.ID+": ") || !strings.Contains(logs[r.Index], "model: test top-1") {
			t.Errorf("job %s task %d (run %s) log:\n%s", job, r.Index, r.ID, logs[r.Index])
		}
		path := filepath.Join(results, r.ID, "result.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var res trainer.Result
		if err := json.Unmarshal(b, &res); err != nil || len(res.Top1) != 1 {
			t.Fatalf("%s: %v %s", path, err, b)
		}
		top1[i] = res.Top1[0]
		st, _ := os.Stat(path)
		stamps[i] = st.ModTime()
	}

	if out := lcl("experiment", "collect", results); !strings.Contains(out, "imported 2 finished runs; 0 unfinished") {
		t.Errorf("collect:\n%s", out)
	}
	out := lcl("report", "--grid", grid, "--out", filepath.Join(dir, "report"))
	if !strings.Contains(out, "| DR | Model | SL | LS |") {
		t.Fatalf("report:\n%s", out)
	}
	for i, r := range runs {
		if v := fmt.Sprintf("%.2f", 100*top1[i]); !strings.Contains(out, v) {
			t.Errorf("the report lacks run %s's top-1 %s %%:\n%s", r.ID, v, out)
		}
	}

	// Resubmitted (a requeue or a second sbatch): nothing is trained again.
	job, logs = submit()
	for i, r := range runs {
		if want := "lcl: " + r.ID + " is already done"; strings.TrimSpace(logs[r.Index]) != want {
			t.Errorf("resubmitted job %s task %d: %q, want %q", job, r.Index, logs[r.Index], want)
		}
		st, err := os.Stat(filepath.Join(results, r.ID, "result.json"))
		if err != nil || !st.ModTime().Equal(stamps[i]) {
			t.Errorf("run %s's result.json was rewritten (%v)", r.ID, err)
		}
	}

	// Requeued while it trains (scontrol requeue: Slurm stops the task with
	// SIGTERM and runs the script again from the top), run 0 in a fresh
	// results folder ends as it did uninterrupted, and its log keeps both
	// attempts.
	again := filepath.Join(dir, "requeued")
	if err := os.Mkdir(again, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runFor(time.Minute, append(env, "LCL_RESULTS="+again), "sbatch", "--parsable", "--array=0", script)
	if err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	job = strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:])
	task := job + "_0"
	runDir := filepath.Join(again, runs[0].ID)
	taskLog := filepath.Join(results, fmt.Sprintf("lcl-two-%s.log", task))
	// lcl train prints its first line when the data is loaded and training starts.
	if !waitFor(5*time.Minute, func() bool {
		b, _ := os.ReadFile(taskLog)
		return strings.Contains(string(b), "\nlcl train: ")
	}) {
		t.Fatalf("task %s did not start training", task)
	}
	if out, err := runFor(time.Minute, env, "scontrol", "requeue", task); err != nil {
		t.Fatalf("scontrol requeue %s: %v\n%s", task, err, out)
	}
	// Slurm starts a requeued job again after cred_expire (slurm.conf).
	var state string
	if !waitFor(5*time.Minute, func() bool {
		state, _ = runFor(10*time.Second, env, "squeue", "--noheader", "--jobs", task, "--format=%T")
		return state == "" || strings.Contains(state, "Invalid job id") // ended (and purged)
	}) {
		t.Fatalf("requeued task %s did not end: %q", task, state)
	}
	b, err := os.ReadFile(taskLog)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	// The second attempt resumes (or, had the run ended before Slurm's
	// SIGTERM came, finds it done).
	attempts := strings.Count(log, "lcl: run "+runs[0].ID+": ") + strings.Count(log, "lcl: "+runs[0].ID+" is already done")
	if attempts != 2 || !strings.Contains(log, "DUE TO JOB REQUEUE") {
		t.Fatalf("the requeued task's log holds %d attempts, want 2:\n%s", attempts, log)
	}
	t.Logf("requeued task's log:\n%s", log)
	sameResult(t, filepath.Join(runDir, "result.json"), filepath.Join(results, runs[0].ID, "result.json"))
}

// processWithArg is the pid of a process one of whose arguments is arg, or 0.
func processWithArg(arg string) int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
				return pid
			}
		}
	}
	return 0
}

// sameResult fails t unless the run result at path has the epochs and the
// final accuracy of the one at ref (losses up to float rounding).
func sameResult(t *testing.T, path, ref string) {
	t.Helper()
	read := func(p string) trainer.Result {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r trainer.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return r
	}
	a, b := read(ref), read(path)
	if len(a.Epochs) != len(b.Epochs) || len(a.Top1) != len(b.Top1) {
		t.Fatalf("%s: %d epochs, %d models; %s: %d, %d", path, len(b.Epochs), len(b.Top1), ref, len(a.Epochs), len(a.Top1))
	}
	for e := range a.Epochs {
		x, y := a.Epochs[e].PeerMetrics, b.Epochs[e].PeerMetrics
		if x.TestTop1 != y.TestTop1 || math.Abs(x.TrainLoss-y.TrainLoss) > 1e-6 || math.Abs(x.TestLoss-y.TestLoss) > 1e-6 {
			t.Errorf("epoch %d: %+v, uninterrupted %+v", e+1, y, x)
		}
	}
}
