package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestMain lets the test binary stand in for lcl itself. With
// LCL_FAKE_TRAIN set, `… train …` invocations (the experiment runner's
// children, launched as os.Executable()) play a fake `lcl train` that writes
// a result into --out; with LCL_TEST_CLI set, any other invocation runs the
// real CLI, so that tests can signal a whole `lcl experiment run` process.
func TestMain(m *testing.M) {
	args := os.Args[1:]
	if os.Getenv("LCL_FAKE_TRAIN") != "" && slices.Contains(args, "train") {
		os.Exit(fakeTrain(args))
	}
	if dir := os.Getenv("LCL_TEST_SLOW_STOP"); dir != "" {
		os.Exit(run(context.Background(), nil, SystemIO(), slowStopRoot(dir)))
	}
	if dir := os.Getenv("LCL_TEST_STORE_WRITER"); dir != "" {
		os.Exit(storeWriter(dir))
	}
	if server := os.Getenv(envPluginServer); server != "" {
		builtinServer = func() []string { return []string{server, "plugins", "serve"} }
	}
	if os.Getenv("LCL_TEST_CLI") != "" {
		os.Exit(Main(args))
	}
	os.Exit(runTests(m))
}

// envPluginServer names the built builtinserver (testdata/builtinserver)
// to the test binary's children that play lcl (LCL_TEST_CLI, the grid
// runner's lcl train), so that their built-in plugins start from it too.
const envPluginServer = "LCL_TEST_PLUGIN_SERVER"

// runTests runs the tests with the built-in plugins served by
// testdata/builtinserver, built here once: each start of the test binary
// (which links libtorch) costs ~0.4 CPU-seconds, and the tests start
// hundreds of plugins. TestPluginsServeExitsOnSIGTERM and lclServesPlugins's
// tests still serve them from the test binary itself, as `lcl plugins serve`.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lcl-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	server := filepath.Join(dir, "builtinserver")
	if out, err := exec.Command("go", "build", "-o", server, "./testdata/builtinserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cli tests: go build ./testdata/builtinserver: %v\n%s", err, out)
		return 1
	}
	os.Setenv(envPluginServer, server)
	builtinServer = func() []string { return []string{server, "plugins", "serve"} }
	return m.Run()
}

// lclServesPlugins makes the test's built-in plugins start as lcl's do, from
// the test binary re-executed as `lcl plugins serve KIND NAME` (plan_test.go's
// init serves them), rather than from testdata/builtinserver.
func lclServesPlugins(t *testing.T) {
	saved := builtinServer
	builtinServer = nil
	t.Setenv(envPluginServer, "")
	t.Cleanup(func() { builtinServer = saved })
}

// slowStopRoot is a command that, once cancelled, takes slowStop to write
// DIR/checkpoint before it returns: a training run writing its checkpoint.
// DIR/started says it is running.
func slowStopRoot(dir string) func(*Factory) *cobra.Command {
	return func(*Factory) *cobra.Command {
		return &cobra.Command{Use: "slow", RunE: func(cmd *cobra.Command, _ []string) error {
			os.WriteFile(filepath.Join(dir, "started"), nil, 0o644)
			<-cmd.Context().Done()
			time.Sleep(slowStop)
			if err := os.WriteFile(filepath.Join(dir, "checkpoint"), []byte("epoch 1"), 0o644); err != nil {
				return err
			}
			return cmd.Context().Err()
		}}
	}
}

// slowStop is how long slowStopRoot's command takes to stop.
const slowStop = 4 * time.Second

func flagArg(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// fakeTrain records its arguments in OUT/args.txt and writes metrics and a
// result whose top-1 is 70.<seed>; with LCL_FAKE_TRAIN_TIME=D training
// takes D, and another training of the same folder meanwhile fails. With
// LCL_FAKE_BLOCK_SEED equal to its
// seed it writes a checkpoint, then waits for SIGINT and exits 130 like an
// interrupted run. With LCL_FAKE_FINISH_SEED equal to its seed it writes
// its result, then waits for SIGINT and exits 0: a run that finishes as
// Ctrl-C arrives.
func fakeTrain(args []string) int {
	out, seed := flagArg(args, "--out"), flagArg(args, "--seed")
	if seed == "" {
		seed = "1" // lcl train's default (a grid leaves defaults out)
	}
	if out == "" {
		fmt.Fprintln(os.Stderr, "fake train: want `train ... --out DIR`, got", args)
		return 2
	}
	f, err := os.OpenFile(filepath.Join(out, "args.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	if d, err := time.ParseDuration(os.Getenv("LCL_FAKE_TRAIN_TIME")); err == nil {
		// Training takes d; a second training of the folder meanwhile
		// fails both (two runners corrupting one run).
		mark := filepath.Join(out, "training-now")
		m, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake train: another training of", out, "is under way")
			return 3
		}
		m.Close()
		time.Sleep(d)
		os.Remove(mark)
	}
	if block := os.Getenv("LCL_FAKE_BLOCK_SEED"); block != "" && block == seed {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		os.WriteFile(filepath.Join(out, "checkpoint.pt"), []byte("epoch 1"), 0o644)
		select {
		case <-sig:
			return 130
		case <-time.After(time.Minute):
			return 1
		}
	}
	metrics := fmt.Sprintf("{\"epoch\":1,\"loss\":2.0,\"top1\":[0.60%s],\"top5\":[0.90]}\n{\"epoch\":2,\"loss\":1.0,\"top1\":[0.70%s],\"top5\":[0.95]}\n", seed, seed)
	if err := os.WriteFile(filepath.Join(out, "metrics.jsonl"), []byte(metrics), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res := fmt.Sprintf(`{"top1":[0.70%s],"top5":[0.95]}`, seed) // fractions, as lcl train writes
	if err := os.WriteFile(filepath.Join(out, "result.json"), []byte(res), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if finish := os.Getenv("LCL_FAKE_FINISH_SEED"); finish != "" && finish == seed {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		os.WriteFile(filepath.Join(out, "finished"), nil, 0o644) // after result.json: the test's cue
		select {
		case <-sig:
		case <-time.After(time.Minute):
			return 1
		}
	}
	return 0
}

// parallelOK: the tests that call t.Parallel are those that mostly wait
// (for child processes, signals, a silent endpoint) and run lcl in process,
// if at all, without plugins: lcl in process ends every plugin of the
// process when a command returns (plugins.Cleanup), so two in-process
// commands with plugins must not overlap, and a parallel test must not
// use t.Setenv. Parallel tests run together after all the others.
