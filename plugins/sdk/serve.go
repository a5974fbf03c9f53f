package sdk

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/lcl-project/lcl/plugins/internal/shim"
)

// ServeConfig names what a plugin executable serves: a strategy, a
// similarity source, or both.
type ServeConfig struct {
	Strategy         Strategy
	SimilaritySource SimilaritySource
}

// Serve runs the plugin until the host ends it. It never returns when run by
// lcl; run by hand (without the handshake cookie) it prints what the
// executable is and exits with status 1.
func Serve(cfg ServeConfig) {
	if cfg.Strategy == nil && cfg.SimilaritySource == nil {
		fmt.Fprintln(os.Stderr, "lcl plugin: sdk.Serve needs a Strategy or a SimilaritySource")
		os.Exit(1)
	}
	if os.Getenv(shim.Handshake.MagicCookieKey) != shim.Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s is an lcl plugin: put it in $LCL_PLUGIN_PATH or ~/.lcl/plugins and run `lcl plugins list`\n", os.Args[0])
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: shim.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			shim.ProtocolVersion: shim.PluginSet(cfg.Strategy, cfg.SimilaritySource),
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server { return shim.NewServer(opts) },
	})
}
