package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X ...cli.Version=v1.2.3").
var Version = "dev"

func versionString() string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("lcl %s%s (%s %s/%s)", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lcl's version",
		Args:  noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.Emit("version", map[string]string{"version": Version, "full": versionString()}) {
				fmt.Fprintln(f.IO.Out, versionString())
			}
			return nil
		},
	}
}
