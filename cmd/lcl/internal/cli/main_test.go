package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/trainer/torch/torchtest"
)

// TestMain lets the test binary stand in for lcl itself: with LCL_TEST_CLI
// set it runs the real CLI, so that tests can signal a whole `lcl
// experiment run` process, and a grid's runs train in children of it. With
// LCL_FAKE_TRAIN set, a grid's runs are testdata/faketrain instead, a fake
// `lcl train` that writes a result into --out (fakeTrainFor).
//
// Every start of the test binary first sets libtorch's runtime as lcl's main
// does (torchtest.Init): the tests train in this process and in its children.
func TestMain(m *testing.M) {
	args := os.Args[1:]
	if err := torchtest.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		os.Exit(2)
	}
	if dir := os.Getenv("LCL_TEST_SLOW_STOP"); dir != "" {
		os.Exit(run(context.Background(), nil, SystemIO(), slowStopRoot(dir)))
	}
	if dir := os.Getenv("LCL_TEST_STORE_WRITER"); dir != "" {
		os.Exit(storeWriter(dir))
	}
	if server := os.Getenv(envPluginServer); server != "" {
		testHookBuiltinServer = func() []string { return []string{server, "plugins", "serve"} }
	}
	if fake := os.Getenv(envFakeTrain); fake != "" {
		testHookRunExecutable = fakeTrainFor(fake)
	}
	if os.Getenv("LCL_TEST_CLI") != "" {
		os.Exit(Main(args))
	}
	os.Exit(runTests(m))
}

// envPluginServer names the built builtinserver (testdata/builtinserver)
// to the test binary's children that play lcl (LCL_TEST_CLI, the grid
// runner's lcl train), so that their built-in plugins start from it too;
// envFakeTrain names the built faketrain (testdata/faketrain) to them.
const (
	envPluginServer = "LCL_TEST_PLUGIN_SERVER"
	envFakeTrain    = "LCL_TEST_FAKE_TRAIN_BIN"
)

// fakeTrainFor is the testHookRunExecutable of the tests: with LCL_FAKE_TRAIN set,
// a grid's runs are the fake lcl train at path (testdata/faketrain: it
// records its arguments and writes a result whose top-1 is 70.<seed>; its
// doc comment lists the variables that make it slow, block or finish as
// Ctrl-C arrives); without it, lcl itself (the test binary) trains them.
func fakeTrainFor(path string) func() string {
	return func() string {
		if os.Getenv("LCL_FAKE_TRAIN") != "" {
			return path
		}
		return ""
	}
}

// runTests runs the tests with the built-in plugins served by
// testdata/builtinserver and the grids' fake runs (LCL_FAKE_TRAIN) played by
// testdata/faketrain, both built here once: each start of the test binary
// (which links libtorch) costs ~0.4 CPU-seconds, and the tests start
// hundreds of plugins and dozens of fake runs. TestPluginsServeExitsOnSIGTERM
// and lclServesPlugins's tests still serve plugins from the test binary
// itself, as `lcl plugins serve`. A test binary run by hand needs go on
// $PATH, as TestSimilarityThirdPartyPlugin does.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lcl-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cli tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// One go build writes both into dir (-o names a folder).
	if out, err := exec.Command("go", "build", "-o", dir+"/", "./testdata/builtinserver", "./testdata/faketrain").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cli tests: go build ./testdata/builtinserver ./testdata/faketrain: %v\n%s", err, out)
		return 1
	}
	server, fake := filepath.Join(dir, "builtinserver"), filepath.Join(dir, "faketrain")
	os.Setenv(envPluginServer, server)
	os.Setenv(envFakeTrain, fake)
	testHookBuiltinServer = func() []string { return []string{server, "plugins", "serve"} }
	testHookRunExecutable = fakeTrainFor(fake)
	return m.Run()
}

// lclServesPlugins makes the test's built-in plugins start as lcl's do, from
// the test binary re-executed as `lcl plugins serve KIND NAME` (plan_test.go's
// init serves them), rather than from testdata/builtinserver.
func lclServesPlugins(t *testing.T) {
	saved := testHookBuiltinServer
	testHookBuiltinServer = nil
	t.Setenv(envPluginServer, "")
	t.Cleanup(func() { testHookBuiltinServer = saved })
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

// parallelOK: the tests that call t.Parallel are those that mostly wait
// (for child processes, signals, a silent endpoint) and run lcl in process,
// if at all, without plugins: lcl in process ends every plugin of the
// process when a command returns (plugins.Cleanup), so two in-process
// commands with plugins must not overlap, and a parallel test must not
// use t.Setenv. Parallel tests run together after all the others.
