// Command faketrain plays `lcl train` for the cli tests' grids (with
// LCL_FAKE_TRAIN set, their runs launch it instead of lcl: testHookRunExecutable):
// it takes lcl's arguments, `[GLOBAL FLAGS] train ... --out DIR [--seed N]`,
// and starts in milliseconds where the test binary, which links libtorch,
// takes ~0.4 CPU-seconds. fakeTrain says what it does.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	if !slices.Contains(args, "train") {
		fmt.Fprintln(os.Stderr, "fake train: want `[FLAGS] train ... --out DIR`, got", args)
		os.Exit(2)
	}
	os.Exit(fakeTrain(args))
}

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
