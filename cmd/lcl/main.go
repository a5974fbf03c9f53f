// Command lcl is the label-similarity curriculum learning tool: label sets,
// documents, embeddings, similarity matrices, training and reports.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/lcl-project/lcl/cmd/lcl/internal/cli"
	"github.com/lcl-project/lcl/trainer/torch"
)

func main() {
	// libtorch's process-wide settings, first: with OMP_WAIT_POLICY unset
	// this starts the program again with it set (OpenMP reads it at load).
	rt, err := torch.DefaultRuntime()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcl:", err)
		os.Exit(2)
	}
	// Without libtorch, or with a shim of another ABI, the commands that do
	// not train still run; the ones that do report it.
	if err := torch.Init(rt); err != nil && !errors.Is(err, torch.ErrNoLibtorch) && !errors.Is(err, torch.ErrABIMismatch) {
		fmt.Fprintln(os.Stderr, "lcl:", err)
		os.Exit(70)
	}
	os.Exit(cli.Main(os.Args[1:]))
}
