// Command lcl is the label-similarity curriculum learning tool: label sets,
// documents, embeddings, similarity matrices, training and reports.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/lcl-project/lcl/cmd/lcl/internal/cli"
	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/trainer/torch"
)

func main() {
	// A command line that only prints help or the version needs neither a
	// supervisor nor libtorch's settings: each is a start of the program,
	// which loads libtorch (linked in) again.
	if printsOnly(os.Args[1:]) {
		os.Exit(cli.Main(os.Args[1:]))
	}
	// A parent process turns crashes no recover catches (a library's
	// goroutine, a fatal runtime error) into exit status 70 with a report.
	// A plugin serving its handshake must be the process its host started.
	serving := len(os.Args) > 2 && os.Args[1] == "plugins" && os.Args[2] == "serve"
	if code, ok := crash.Supervise(!serving, withOMPPolicy); ok {
		os.Exit(code)
	}
	// libtorch's process-wide settings, first: with OMP_WAIT_POLICY unset
	// this starts the program again with it set (OpenMP reads it at load;
	// the supervised child has it set by its parent).
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

// withOMPPolicy sets OMP_WAIT_POLICY for the supervised lcl when it is
// unset, so that it need not execute itself again (torch.Init).
func withOMPPolicy(env []string) []string {
	env, _ = torch.WithOMPWaitPolicy(env, torch.DefaultOMPWaitPolicy)
	return env
}

// printsOnly reports whether args ask only for help or the version: no
// command, the commands version, help and completion, or -h/--help
// anywhere before "--" (cobra then prints the help and runs nothing).
// Anything it does not recognise runs the usual way.
func printsOnly(args []string) bool {
	command := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return command == ""
		case a == "-h" || a == "--help":
			return true
		case a == "--store" || a == "--store-wait" || a == "--wordnet":
			i++ // the global flags that take a value
		case strings.HasPrefix(a, "-"):
		case command == "":
			command = a
		}
	}
	switch command {
	case "", "version", "help", "completion":
		return true
	}
	return false
}
