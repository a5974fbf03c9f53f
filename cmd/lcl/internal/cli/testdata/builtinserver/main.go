// Command builtinserver serves lcl's built-in plugins as `lcl plugins
// serve KIND NAME` does, without the rest of lcl: the cli tests build it
// once and start their built-in plugins from it (testHookBuiltinServer), since
// the test binary, which links libtorch, takes ~0.4 CPU-seconds to start.
// It takes lcl's arguments, `plugins serve KIND NAME`, so that a plugin's
// command line ends as lcl's does (the end-to-end tests find the plugin
// they kill by it).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lcl-project/lcl/plugins"
)

func main() {
	if len(os.Args) != 5 || os.Args[1] != "plugins" || os.Args[2] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: builtinserver plugins serve KIND NAME")
		os.Exit(2)
	}
	signal.Reset(syscall.SIGTERM) // as lcl plugins serve: SIGTERM ends it at once
	if err := plugins.ServeBuiltin(os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, "builtinserver:", err)
		os.Exit(1)
	}
}
