// Command lcl is the label-similarity curriculum learning tool: label sets,
// documents, embeddings, similarity matrices, training and reports.
package main

import (
	"os"

	"github.com/lcl-project/lcl/cmd/lcl/internal/cli"
	"github.com/lcl-project/lcl/trainer/torch"
)

func main() {
	torch.ReexecWithOMPPolicy() // OpenMP reads OMP_WAIT_POLICY at load time
	os.Exit(cli.Main(os.Args[1:]))
}
