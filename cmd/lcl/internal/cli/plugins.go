package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/source"
	"github.com/lcl-project/lcl/simstore"
)

// newHost returns a plugin host for one command; the caller closes it.
// timeout 0 means $LCL_PLUGIN_TIMEOUT or the default.
func newHost(f *Factory, timeout time.Duration) *plugins.Host {
	h := &plugins.Host{Timeout: timeout}
	// The built-in similarity sources run in the plugin process and open
	// WordNet and the store (read-only) themselves.
	storeDir := f.StoreDir
	if storeDir == "" {
		storeDir = simstore.DefaultDir()
	}
	h.Env = []string{source.EnvStore + "=" + storeDir}
	if f.WordNetDir != "" {
		h.Env = append(h.Env, source.EnvWordNet+"="+f.WordNetDir)
	}
	if os.Getenv("LCL_PLUGIN_LOG") != "" {
		h.Log = f.IO.Err
	}
	return h
}

func newPluginsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List strategy and similarity plugins",
		Long: `Strategies (how each epoch's targets, weights and losses are chosen) and
similarity sources (how a class similarity matrix is made) are plugins: separate
processes that lcl talks to over gRPC (hashicorp/go-plugin). The built-ins are
served by lcl itself; others are executables named lcl-strategy-NAME or
lcl-similarity-NAME, found in the folders of $LCL_PLUGIN_PATH (colon-separated),
then ~/.lcl/plugins. A built-in wins over an executable of the same name.

Environment:
  LCL_PLUGIN_PATH     plugin folders searched before ~/.lcl/plugins
  LCL_PLUGIN_TIMEOUT  longest wait for one plugin call (Go duration, default 1m)
  LCL_PLUGIN_LOG      when set, plugins' stderr and go-plugin's log go to stderr

See docs/plugins.md for writing one.`,
	}
	cmd.AddCommand(newPluginsListCmd(f), newPluginsServeCmd())
	return cmd
}

func newPluginsListCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every plugin with its kind, version, path and parameters",
		Long: `Start every built-in and every plugin on the search path, ask it to describe
itself, and list name, kind, version, where it comes from and its parameters
(name=default). A plugin that fails to start or answer is listed with its error.
With --json, one {"message_type":"plugin",...} line per plugin.`,
		Example: `  lcl plugins list
  LCL_PLUGIN_PATH=./my-plugins lcl plugins list --json`,
		Args: noArgsOrUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h := newHost(f, 0)
			defer h.Close()
			list := h.List(cmd.Context())
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			if f.JSON {
				for _, d := range list {
					f.Emit("plugin", d)
				}
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tPATH\tPARAMETERS")
			for _, d := range list {
				params := make([]string, len(d.Params))
				for i, p := range d.Params {
					params[i] = p.Name + "=" + p.Default
				}
				version := d.Version
				if d.Error != "" {
					version = "ERROR"
					params = []string{d.Error}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Kind, d.Name, version, d.Path, strings.Join(params, " "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			f.Logf("search path: %s", strings.Join(plugins.SearchPath(), ":"))
			return nil
		},
	}
}

// newPluginsServeCmd is how the host runs a built-in: lcl re-executes itself
// as `lcl plugins serve KIND NAME` and speaks the plugin protocol on stdout.
func newPluginsServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "serve KIND NAME",
		Short:  "Serve a built-in strategy or similarity source as a plugin (used by lcl itself)",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return plugins.ServeBuiltin(args[0], args[1])
		},
	}
}
