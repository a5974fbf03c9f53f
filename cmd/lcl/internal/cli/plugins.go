package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lcl-project/lcl/plugins"
	"github.com/lcl-project/lcl/plugins/source"
)

// testHookBuiltinServer, when set, is the command that serves the built-in
// plugins (plugins.Host.Self); nil: lcl itself, as `lcl plugins serve`.
// Only this package's tests set it: their lcl is the test binary, which
// links libtorch and so takes ~0.4 CPU-seconds to start, once per plugin,
// where a binary of the plugins alone takes milliseconds.
var testHookBuiltinServer func() []string

// newHost returns a plugin host for one command; the caller closes it.
// timeout 0 means $LCL_PLUGIN_TIMEOUT or the default.
func newHost(f *Factory, timeout time.Duration) *plugins.Host {
	h := &plugins.Host{Timeout: timeout, RequirePinned: f.RequirePinned || os.Getenv("LCL_PLUGIN_REQUIRE_PINNED") != ""}
	if testHookBuiltinServer != nil {
		h.Self = testHookBuiltinServer()
	}
	// The built-in similarity sources run in the plugin process and open
	// WordNet and the store (read-only) themselves.
	h.Env = []string{source.EnvStore + "=" + f.storeDir()}
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
		Short: "List, describe and pin strategy and similarity plugins",
		Long: `Strategies (how each epoch's targets, weights and losses are chosen) and
similarity sources (how a class similarity matrix is made) are plugins: separate
processes that lcl talks to over gRPC (hashicorp/go-plugin). The built-ins are
served by lcl itself; others are executables named lcl-strategy-NAME or
lcl-similarity-NAME, found in the folders of $LCL_PLUGIN_PATH (colon-separated),
then ~/.lcl/plugins. A built-in wins over an executable of the same name.

Trust: lcl runs a plugin executable only if it and every folder above it are
owned by you or root and writable by nobody else (a sticky folder such as /tmp
may be); otherwise it is refused with the reason. ` + "`lcl plugins pin`" + ` records the
SHA-256 of each plugin in a lock file (~/.lcl/plugins.lock); a pinned plugin
starts only while it still matches, and --require-pinned (or
$LCL_PLUGIN_REQUIRE_PINNED) refuses every unpinned one. Plugins get a minimal
environment: PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*, TZ, TMPDIR,
LD_LIBRARY_PATH, OMP_WAIT_POLICY, the names listed in $LCL_PLUGIN_ENV, and what
the protocol needs.

Environment:
  LCL_PLUGIN_PATH     plugin folders searched before ~/.lcl/plugins
  LCL_PLUGIN_TIMEOUT  longest wait for one plugin call (Go duration, default 1m)
  LCL_PLUGIN_START_TIMEOUT  longest wait from starting a plugin to its handshake
                      (Go duration, default 30s); then it is killed with all it started
  LCL_PLUGIN_LOG      when set, plugins' stderr and go-plugin's log go to stderr
  LCL_PLUGIN_LOCK     the lock file (default ~/.lcl/plugins.lock)
  LCL_PLUGIN_ENV      further variables passed to plugins (comma-separated names)
  LCL_PLUGIN_REQUIRE_PINNED  when set, as --require-pinned

See docs/plugins.md for writing one and for the trust model.`,
	}
	cmd.AddCommand(newPluginsListCmd(f), newPluginsPinCmd(f), newPluginsServeCmd())
	return cmd
}

func newPluginsListCmd(f *Factory) *cobra.Command {
	var describe bool
	cmd := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "List every plugin with its kind, path, trust and pin; --describe starts them for version and parameters",
		Long: `List the built-in plugins (with version and parameters: they are lcl's own
code) and the plugins on the search path: kind, name, path, whether lcl refuses
to run it and why, and its pin (ok, changed, moved; - when not pinned). No
plugin is started. With --describe each plugin that is not refused is started,
asked to describe itself (version, parameters as name=default) and stopped; one
that fails to start or answer is listed with its error. NAMEs limit the list.
With --json, one {"message_type":"plugin",...} line per plugin.`,
		Example: `  lcl plugins list
  lcl plugins list --describe annealls
  LCL_PLUGIN_PATH=./my-plugins lcl plugins list --json`,
		RunE: func(cmd *cobra.Command, names []string) error {
			h := newHost(f, 0)
			defer h.Close()
			list, lerr := h.List(cmd.Context(), plugins.ListOptions{Describe: describe, Names: names})
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			if len(names) > 0 && len(list) == 0 {
				return fmt.Errorf("no plugin named %s (search path: %s)", strings.Join(names, ", "), strings.Join(plugins.SearchPath(), ":"))
			}
			if f.JSON {
				for _, d := range list {
					f.Emit("plugin", d)
				}
				return lerr
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tVERSION\tPIN\tPATH\tPARAMETERS")
			for _, d := range list {
				params := make([]string, len(d.Params))
				for i, p := range d.Params {
					params[i] = p.Name + "=" + p.Default
				}
				version, pin := d.Version, d.Pin
				switch {
				case d.Refused != "":
					version, params = "REFUSED", []string{d.Refused}
				case d.Error != "":
					version, params = "ERROR", []string{d.Error}
				case version == "" && d.Path != "built-in":
					version = "?" // not started: --describe
				}
				if pin == "" {
					pin = "-"
					if d.Path == "built-in" {
						pin = ""
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Kind, d.Name, version, pin, d.Path, strings.Join(params, " "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			f.Logf("search path: %s; lock file: %s", strings.Join(plugins.SearchPath(), ":"), plugins.LockPath())
			return lerr
		},
	}
	cmd.Flags().BoolVar(&describe, "describe", false, "start each plugin (not refused) and list its version and parameters")
	return cmd
}

func newPluginsPinCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "pin [NAME...]",
		Short: "Record the SHA-256 of plugins in the lock file; pinned plugins start only while they match",
		Long: `Check each plugin on the search path (or the NAMEs given; KIND/NAME when a
strategy and a similarity source share a name) as lcl would before running it,
and record its SHA-256 and path in the lock file ($LCL_PLUGIN_LOCK, default
~/.lcl/plugins.lock). From then on lcl starts a pinned plugin only if its file
still has that digest (go-plugin's SecureConfig checks it just before the
process starts) and is at that path; with --require-pinned it starts no
unpinned plugin at all. Without NAMEs the lock file is rewritten with every
plugin found; with NAMEs only their lines change. Pin after reading what a
plugin does: the pin says "this file, as I checked it", not that it is safe.
A pin covers the executable file only (not the files a script imports).`,
		Example: `  lcl plugins pin
  lcl plugins pin annealls similarity/bigram`,
		RunE: func(cmd *cobra.Command, names []string) error {
			lock := plugins.LockPath()
			pinned, total, err := plugins.PinFound(lock, plugins.SearchPath(), names)
			if err != nil {
				return err
			}
			for _, p := range pinned {
				if !f.Emit("plugin_pinned", map[string]string{"kind": p.Kind, "name": p.Name, "sha256": p.SHA256, "path": p.Path, "lock": lock}) {
					fmt.Fprintf(f.IO.Out, "pinned %s %s sha256:%.16s… %s\n", p.Kind, p.Name, p.SHA256, p.Path)
				}
			}
			f.Logf("lock file: %s (%d plugins pinned)", lock, total)
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
			// lcl's own handler turns SIGTERM into a cancelled context,
			// which a serving plugin never looks at: give SIGTERM its
			// default action back, so that the plugin ends at once.
			// (go-plugin ignores SIGINT on purpose: the host stops it.)
			signal.Reset(syscall.SIGTERM)
			return plugins.ServeBuiltin(args[0], args[1])
		},
	}
}
