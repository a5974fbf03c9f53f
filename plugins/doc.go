// Package plugins is the host side of lcl's plugin system: it finds plugin
// executables (lcl-strategy-NAME, lcl-similarity-NAME in $LCL_PLUGIN_PATH
// and ~/.lcl/plugins), starts them with go-plugin over gRPC, checks the
// handshake and protocol version, and wraps every call with a timeout and
// checks of what comes back, so that a plugin that crashes, hangs or returns
// an invalid plan stops the run with a one-line error naming it.
//
// The built-in strategies (package plugins/strategy) and similarity sources
// (package plugins/source) are served the same way, by the lcl binary
// re-executed as `lcl plugins serve KIND NAME`. The protocol lives in
// plugins/proto, the author-facing SDK in plugins/sdk.
package plugins
