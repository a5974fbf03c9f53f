package plugins

import (
	"fmt"
	"os"

	"github.com/lcl-project/lcl/plugins/internal/shim"

	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/plugins/source"
	"github.com/lcl-project/lcl/plugins/strategy"
)

// ServeBuiltin serves one built-in as a plugin; `lcl plugins serve KIND
// NAME` calls it when the host re-executes lcl. It returns only on a bad
// kind or name.
func ServeBuiltin(kind, name string) error {
	if os.Getenv(shim.Handshake.MagicCookieKey) != shim.Handshake.MagicCookieValue {
		return fmt.Errorf("`lcl plugins serve` is run by lcl itself when it needs a built-in plugin; use `lcl plugins list`")
	}
	switch kind {
	case KindStrategy:
		st, ok := strategy.New(name)
		if !ok {
			return fmt.Errorf("no built-in strategy %q (built in: %v)", name, strategy.Names())
		}
		sdk.Serve(sdk.ServeConfig{Strategy: st})
	case KindSimilarity:
		src, ok := source.New(name)
		if !ok {
			return fmt.Errorf("no built-in similarity source %q (built in: %v)", name, source.Names())
		}
		sdk.Serve(sdk.ServeConfig{SimilaritySource: src})
	default:
		return fmt.Errorf("unknown plugin kind %q, want %s or %s", kind, KindStrategy, KindSimilarity)
	}
	return nil
}
