package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lcl-project/lcl/internal/crash"
)

// Exit codes, documented in `lcl help exit-codes` and the README.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitPanic     = crash.ExitCode // 70: a bug; see `lcl help exit-codes`
	ExitCancelled = 130
)

// usageError marks an error in how lcl was called (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit code 2).
func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitCancelled
	case errors.As(err, &ue):
		return ExitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		return ExitUsage // cobra's own error for `lcl nosuchcommand`
	default:
		return ExitFailure
	}
}
