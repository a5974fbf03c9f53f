//go:build e2e

package cli

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
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
AuthInfo=socket=%[4]s
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
// task finds its run done and trains nothing.
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
}
