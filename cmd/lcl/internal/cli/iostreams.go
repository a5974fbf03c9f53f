package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the command's standard streams.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrTTY is true when Err is a terminal: progress bars are drawn only then.
	ErrTTY bool
}

// SystemIO returns the process's streams.
func SystemIO() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
}
