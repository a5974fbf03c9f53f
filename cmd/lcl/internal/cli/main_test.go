package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain lets the test binary stand in for `lcl train` when the
// experiment runner launches os.Executable(): with LCL_FAKE_TRAIN set it
// writes a result into --out and exits, without running any test.
func TestMain(m *testing.M) {
	if os.Getenv("LCL_FAKE_TRAIN") != "" {
		os.Exit(fakeTrain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeTrain(args []string) int {
	var out, seed string
	sawTrain := false
	for i, a := range args {
		switch {
		case a == "train":
			sawTrain = true
		case a == "--out" && i+1 < len(args):
			out = args[i+1]
		case a == "--seed" && i+1 < len(args):
			seed = args[i+1]
		}
	}
	if !sawTrain || out == "" {
		fmt.Fprintln(os.Stderr, "fake train: want `train ... --out DIR`, got", args)
		return 2
	}
	metrics := fmt.Sprintf("{\"epoch\":1,\"loss\":2.0,\"top1\":[60.%s],\"top5\":[90]}\n{\"epoch\":2,\"loss\":1.0,\"top1\":[70.%s],\"top5\":[95]}\n", seed, seed)
	if err := os.WriteFile(filepath.Join(out, "metrics.jsonl"), []byte(metrics), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res := fmt.Sprintf(`{"top1":[70.%s],"top5":[95]}`, seed)
	if err := os.WriteFile(filepath.Join(out, "result.json"), []byte(res), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
