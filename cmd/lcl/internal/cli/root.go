// Package cli implements the lcl command line: one file per command group,
// each with a newXCmd(f) constructor that parses flags and a run function that
// does the work.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/crash"
	"github.com/lcl-project/lcl/internal/suggest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins"
)

// Main runs lcl with the given arguments and returns the process exit code.
func Main(args []string) int {
	return Run(context.Background(), args, SystemIO())
}

// Run executes lcl against the given streams; tests call it directly. A
// panic of the command is one line on io.Err naming the file with the full
// report, and exit code ExitPanic.
func Run(ctx context.Context, args []string, io *IOStreams) int {
	return run(ctx, args, io, NewRootCmd)
}

// sentAgainAfter is how far apart two signals must be to count as two.
const sentAgainAfter = time.Second

// forceWithin is how soon after the second signal a third must come to
// kill lcl without the checkpoint its stop is writing.
const forceWithin = 5 * time.Second

// run is Run with the command tree made by newRoot (tests give their own).
func run(ctx context.Context, args []string, io *IOStreams, newRoot func(*Factory) *cobra.Command) (code int) {
	finished := make(chan struct{})
	defer close(finished)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go watchSignals(sigs, cancel, finished, io.Err)
	defer plugins.Cleanup() // no plugin process outlives the command
	defer func() {
		if v := recover(); v != nil {
			path, _ := crash.Report(v, debug.Stack())
			fmt.Fprintln(io.Err, crash.Message(v, path))
			code = ExitPanic
		}
	}()
	f := &Factory{IO: io}
	root := newRoot(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w: %v", context.Canceled, err)
		}
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(io.Err, "lcl: cancelled; work done so far is kept")
		} else {
			f.Emit("error", map[string]string{"error": err.Error()})
			printError(io.Err, err)
		}
	}
	return exitCode(err)
}

// watchSignals turns Ctrl-C and SIGTERM into the command's stop. The
// first cancels the command, which stops cleanly (a checkpoint, work
// kept). Signals closer together than sentAgainAfter are one: a signal sent
// to lcl's process group (Ctrl-C, Slurm's scancel) reaches this process
// directly and, a moment later, passed on by the parent that catches its
// crashes (crash.Supervise). A second one while the command is still
// stopping does not kill it — that would lose the checkpoint being written,
// the point of the first — but says so; a third within forceWithin of the
// second kills lcl at once, for a stop that hangs.
func watchSignals(sigs <-chan os.Signal, cancel func(), finished <-chan struct{}, w io.Writer) {
	var last, warned time.Time
	for {
		var sig os.Signal
		select {
		case <-finished:
			return
		case sig = <-sigs:
		}
		now := time.Now()
		switch {
		case last.IsZero():
			cancel()
		case now.Sub(last) < sentAgainAfter:
			continue // the same signal, passed on by the supervisor
		case warned.IsZero() || now.Sub(warned) > forceWithin:
			warned = now
			fmt.Fprintf(w, "lcl: still stopping (writing what a resume needs); %s again within %s kills lcl without it\n",
				signalName(sig), forceWithin)
		default:
			// Die of the signal, as a process without a handler would.
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), s)
			}
			time.Sleep(time.Second) // delivery is asynchronous
			os.Exit(ExitCancelled)
		}
		last = now
	}
}

// signalName is how a user sends sig: Ctrl-C for SIGINT.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "Ctrl-C"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// printError prints err on one line, whatever file names or file contents
// its message quotes (a name holding a newline cannot forge a line of
// lcl's output), or, for an error made of lines (a grid's failures, each
// with the end of its log), each of its lines so.
func printError(w io.Writer, err error) {
	var ml interface{ Lines() []string }
	if !errors.As(err, &ml) {
		fmt.Fprintln(w, "lcl:", bounded.Line(err.Error()))
		return
	}
	for i, l := range ml.Lines() {
		if i == 0 {
			l = "lcl: " + l
		}
		fmt.Fprintln(w, bounded.Line(l))
	}
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "lcl",
		Short: "Label-similarity curriculum learning",
		Long: `lcl trains image classifiers on soft targets that reflect how similar the
classes are, annealed to one-hot over the epochs (Dogan et al., ECCV 2020).

Pipeline: label set → one document per class (lcl wiki) → doc2vec vectors
(lcl embed) → class similarity matrix (lcl similarity) → training with a
strategy (lcl train) → tables and plots (lcl report).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// lcl --version prints what lcl version does.
		Version: versionString(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&f.StoreDir, "store", "", "store folder (default $LCL_STORE, else $XDG_DATA_HOME/lcl/store, else ~/.local/share/lcl/store)")
	root.PersistentFlags().Var(waitValue{&f.StoreWait}, "store-wait", "wait up to this long for a store another lcl is using (default: fail at once)")
	root.PersistentFlags().StringVar(&f.WordNetDir, "wordnet", "", "WordNet 3.0 dict folder (default $WNHOME, else /usr/share/wordnet)")
	root.PersistentFlags().BoolVar(&f.JSON, "json", false, "machine-readable output: one JSON object per line with a message_type field")
	root.PersistentFlags().BoolVarP(&f.Quiet, "quiet", "q", false, "print only results: no progress bars or notes")
	root.PersistentFlags().BoolVar(&f.RequirePinned, "require-pinned", false, "run only plugins pinned with 'lcl plugins pin' (also $LCL_PLUGIN_REQUIRE_PINNED)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{withNearestFlag(cmd, err)} })

	for _, c := range []*cobra.Command{
		newSynsetsCmd(f),
		newStoreCmd(f),
		newWikiCmd(f),
		newEmbedCmd(f),
		newSimilarityCmd(f),
		newTrainCmd(f),
		newEvalCmd(f),
		newModelsCmd(f),
		newPluginsCmd(f),
		newPlanCmd(f),
		newExperimentCmd(f),
		newReportCmd(f),
		newVersionCmd(f),
		newBenchCmd(f),
	} {
		root.AddCommand(c)
	}
	root.AddCommand(helpTopics()...)
	argErrorsAreUsage(root)
	return root
}

// argErrorsAreUsage makes every command's argument check (cobra.ExactArgs and
// friends return plain errors) exit with the usage code 2.
func argErrorsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ue *usageError
			if err != nil && !errors.As(err, &ue) {
				return &usageError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		argErrorsAreUsage(sub)
	}
}

// noArgsOrUsage rejects positional arguments with a usage error, naming
// the flag a lone argument was probably meant for.
func noArgsOrUsage(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if f := flagForArg(cmd, args); f != "" {
			return usagef("%s takes no arguments, got %q: did you mean --%s %s?", cmd.CommandPath(), args, f, args[0])
		}
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// flagForArg guesses the flag a lone positional argument belongs to: the
// unset --synsets for a built-in label set's name (lcl embed imagenet),
// else the command's one unset required flag (lcl eval runs/x: --checkpoint).
func flagForArg(cmd *cobra.Command, args []string) string {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return ""
	}
	fs := cmd.Flags()
	if f := fs.Lookup("synsets"); f != nil && !f.Changed && slices.Contains(labels.Names(), args[0]) {
		return "synsets"
	}
	var required []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Changed && strings.Contains(f.Usage, "(required)") {
			required = append(required, f.Name)
		}
	})
	if len(required) == 1 {
		return required[0]
	}
	return ""
}

// withNearestFlag adds the command's flags nearest to an unknown one to
// pflag's "unknown flag: --epoch" (…; did you mean --epochs?).
func withNearestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	add := func(f *pflag.Flag) {
		if !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add) // (may hold the global flags already)
	cmd.InheritedFlags().VisitAll(add)
	hint := suggest.DidYouMeanFlag(name, names)
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w%s", err, hint)
}

// waitValue is --store-wait: a duration ≥ 0, refused when the command
// line is parsed (a negative one waited not at all, silently).
type waitValue struct{ p *time.Duration }

func (v waitValue) Type() string { return "duration" }
func (v waitValue) String() string {
	if *v.p == 0 {
		return "0" // the help shows no default then
	}
	return v.p.String()
}
func (v waitValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return err
	case d < 0:
		return fmt.Errorf("want a duration ≥ 0 (0: fail at once)")
	}
	*v.p = d
	return nil
}
