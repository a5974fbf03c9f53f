// Package shim is the go-plugin glue shared by the host and the SDK: the
// handshake, the plugin set, and the gRPC client and server shims that convert
// between the sdk types and the generated protocol types. The shims only
// convert; checking plans is the host's job.
package shim

import (
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
)

// ProtocolVersion is the version of plugins/proto/lcl.proto. Bump it on any
// incompatible change; the host refuses plugins of another version.
// Version 2: matrices are float32, and large ones travel as shared files.
const ProtocolVersion = 2

// Handshake is checked by both sides before anything else: a binary started
// without the cookie is not being run as a plugin and says so.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "LCL_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "9f1c0b7e-lcl-label-similarity-curriculum",
}

// Plugin names in the plugin set: the kind a plugin serves.
const (
	KindStrategy   = "strategy"
	KindSimilarity = "similarity"
)

// MaxMessageBytes bounds one gRPC message: a 1000-class target matrix is
// 4 MB, gRPC's default limit. Matrices beyond DefaultInlineLimit (64 MiB)
// travel as shared files (shared.go), so no message comes near it.
const MaxMessageBytes = 256 << 20

// PluginSet is the set a plugin serves (impls non-nil) or the host dispenses
// from (impls nil).
func PluginSet(st sdk.Strategy, src sdk.SimilaritySource) plugin.PluginSet {
	set := plugin.PluginSet{}
	if st != nil || src == nil {
		set[KindStrategy] = &StrategyPlugin{Impl: st}
	}
	if src != nil || st == nil {
		set[KindSimilarity] = &SourcePlugin{Impl: src}
	}
	return set
}

// VersionedPlugins is the host's view: one plugin set per protocol version it speaks.
func VersionedPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: PluginSet(nil, nil)}
}

// DialOptions raise the message limits on the host side.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}

// NewServer builds the plugin side's gRPC server with raised message limits.
func NewServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))
	return grpc.NewServer(opts...)
}
