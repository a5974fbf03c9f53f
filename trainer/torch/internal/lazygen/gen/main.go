// Command gen writes trainer/torch/lazy_gen.c (go generate in
// trainer/torch): gen OUT HEADER...
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lcl-project/lcl/trainer/torch/internal/lazygen"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gen OUT HEADER...")
		os.Exit(2)
	}
	headers := map[string][]byte{}
	var names []string
	for _, h := range os.Args[2:] {
		b, err := os.ReadFile(h)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		headers[filepath.Base(h)] = b
		names = append(names, filepath.Base(h))
	}
	out, err := lazygen.Generate(headers, names)
	if err == nil {
		err = os.WriteFile(os.Args[1], out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
