package shim

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

// SourcePlugin is the go-plugin glue for a SimilaritySource; Impl is set on
// the plugin side only.
type SourcePlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl sdk.SimilaritySource
}

var _ plugin.GRPCPlugin = (*SourcePlugin)(nil)

// GRPCServer registers the similarity service.
func (p *SourcePlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterSimilaritySourceServer(s, &sourceServer{impl: p.Impl})
	return nil
}

// GRPCClient returns an sdk.SimilaritySource that calls the plugin.
func (p *SourcePlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &SourceClient{c: pb.NewSimilaritySourceClient(c)}, nil
}

// SourceClient implements sdk.SimilaritySource over gRPC. With a Sharing
// (Share) a large matrix comes back as a file in its folder.
type SourceClient struct {
	c  pb.SimilaritySourceClient
	sh Sharing
}

// Share sets where large matrices go and above which size.
func (s *SourceClient) Share(sh Sharing) { s.sh = sh }

var _ sdk.SimilaritySource = (*SourceClient)(nil)

func (s *SourceClient) Describe(ctx context.Context) (sdk.SourceInfo, error) {
	r, err := s.c.Describe(ctx, &pb.Empty{})
	if err != nil {
		return sdk.SourceInfo{}, err
	}
	return sdk.SourceInfo{Name: r.GetName(), Version: r.GetVersion(), Summary: r.GetSummary(),
		Params: fromParams(r.GetParams()), NeedsAttributes: r.GetNeedsAttributes()}, nil
}

func (s *SourceClient) Compute(ctx context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	r, err := s.c.Compute(ctx, &pb.SimilarityRequest{LabelSet: req.LabelSet, Classes: toClasses(req.Classes),
		Attributes: toAttributes(req.Attributes), Hierarchy: toNodes(req.Hierarchy), Params: req.Params,
		MatrixDir: s.sh.Dir, InlineLimit: s.sh.limit()})
	if err != nil {
		return nil, err
	}
	return decodeMatrix(r, s.sh.Dir, true)
}

type sourceServer struct {
	pb.UnimplementedSimilaritySourceServer
	impl sdk.SimilaritySource
}

func (s *sourceServer) Describe(ctx context.Context, _ *pb.Empty) (*pb.SourceInfo, error) {
	i, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.SourceInfo{Name: i.Name, Version: i.Version, Summary: i.Summary, Params: toParams(i.Params),
		NeedsAttributes: i.NeedsAttributes}, nil
}

func (s *sourceServer) Compute(ctx context.Context, r *pb.SimilarityRequest) (*pb.Matrix, error) {
	attrs, err := fromAttributes(r.GetAttributes())
	if err != nil {
		return nil, err
	}
	m, err := s.impl.Compute(ctx, sdk.SimilarityRequest{LabelSet: r.GetLabelSet(), Classes: fromClasses(r.GetClasses()),
		Attributes: attrs, Hierarchy: fromNodes(r.GetHierarchy()), Params: r.GetParams()})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("similarity source returned no matrix")
	}
	return encodeMatrix(m, Sharing{Dir: r.GetMatrixDir(), Limit: r.GetInlineLimit()})
}
