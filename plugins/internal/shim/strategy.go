package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

// StrategyPlugin is the go-plugin glue for a Strategy; Impl is set on the
// plugin side only.
type StrategyPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl sdk.Strategy
}

var _ plugin.GRPCPlugin = (*StrategyPlugin)(nil)

// GRPCServer registers the strategy service.
func (p *StrategyPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterStrategyServer(s, &strategyServer{impl: p.Impl})
	return nil
}

// GRPCClient returns an sdk.Strategy that calls the plugin.
func (p *StrategyPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &StrategyClient{c: pb.NewStrategyClient(c)}, nil
}

// StrategyClient implements sdk.Strategy over gRPC. With a Sharing (Share)
// large matrices travel as files in its folder both ways.
type StrategyClient struct {
	c  pb.StrategyClient
	sh Sharing
	// last holds the last shared plan's targets, which the next shared
	// plan of the same size overwrites (see Plan).
	last []float32
}

// Share sets where large matrices go (the host's private folder for this
// plugin) and above which size.
func (s *StrategyClient) Share(sh Sharing) { s.sh = sh }

var _ sdk.Strategy = (*StrategyClient)(nil)

func (s *StrategyClient) Describe(ctx context.Context) (sdk.StrategyInfo, error) {
	r, err := s.c.Describe(ctx, &pb.Empty{})
	if err != nil {
		return sdk.StrategyInfo{}, err
	}
	return sdk.StrategyInfo{Name: r.GetName(), Version: r.GetVersion(), Summary: r.GetSummary(),
		Params: fromParams(r.GetParams()), MaxPeers: int(r.GetModels()), Stages: r.GetStages(),
		NeedsSimilarity: r.GetNeedsSimilarity()}, nil
}

func (s *StrategyClient) Begin(ctx context.Context, run sdk.Run) ([]sdk.Stage, error) {
	sim, err := encodeMatrix(run.Similarity, s.sh)
	if err != nil {
		return nil, fmt.Errorf("similarity: %w", err)
	}
	if f := sim.GetShared(); f != nil {
		// The plugin has read it by the time Begin answers.
		defer os.Remove(f.GetPath())
	}
	r, err := s.c.Begin(ctx, &pb.BeginRequest{
		Classes: toClasses(run.Classes), Similarity: sim,
		NumExamples: int32(run.NumExamples), Labels: toInt32s(run.Labels), Epochs: int32(run.Epochs),
		Params: run.Params, StepsPerEpoch: int32(run.StepsPerEpoch), Model: run.Model,
		MatrixDir: s.sh.Dir, InlineLimit: s.sh.limit(),
	})
	if err != nil {
		return nil, err
	}
	return fromStages(r.GetStages()), nil
}

// Plan asks for a plan. Targets that came as a shared file (beyond the
// inline limit: 64 MiB, 4,096 classes) are read into the memory of the
// last such plan's, which the caller must be done with by then: a
// 21,843-class run then reads each epoch's 1.9 GB into pages already
// mapped. Clone them to keep them past the next Plan.
func (s *StrategyClient) Plan(ctx context.Context, at sdk.PlanAt) (*sdk.Plan, error) {
	r, err := s.c.Plan(ctx, &pb.PlanRequest{Stage: int32(at.Stage), Epoch: int32(at.Epoch), Step: int32(at.Step),
		ClassProbSums: at.ClassProbSums, ClassCounts: at.ClassCounts})
	if err != nil {
		return nil, err
	}
	p, err := fromPlan(r, s.sh.Dir, s.last)
	if err == nil && r.GetTargets().GetShared() != nil {
		s.last = p.Targets.Data
	}
	return p, err
}

func (s *StrategyClient) Observe(ctx context.Context, m sdk.Metrics) error {
	_, err := s.c.Observe(ctx, &pb.Metrics{Stage: int32(m.Stage), Epoch: int32(m.Epoch), Model: int32(m.Peer), Values: m.Values})
	return err
}

func (s *StrategyClient) Features(ctx context.Context, chunks sdk.FeatureStream) error {
	st, err := s.c.Features(ctx)
	if err != nil {
		return err
	}
	for {
		c, err := chunks.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			st.CloseSend()
			return err
		}
		if err := st.Send(&pb.FeatureChunk{Stage: int32(c.Stage), Model: int32(c.Peer), Dim: int32(c.Dim),
			Indices: toInt32s(c.Indices), Data: c.Data}); err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream early: its status is the real error.
				_, err = st.CloseAndRecv()
			}
			return err
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

type strategyServer struct {
	pb.UnimplementedStrategyServer
	impl sdk.Strategy

	mu sync.Mutex
	sh Sharing // from Begin: where plans' large targets go
}

func (s *strategyServer) Describe(ctx context.Context, _ *pb.Empty) (*pb.StrategyInfo, error) {
	i, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.StrategyInfo{Name: i.Name, Version: i.Version, Summary: i.Summary, Params: toParams(i.Params),
		Models: int32(i.MaxPeers), Stages: i.Stages, NeedsSimilarity: i.NeedsSimilarity}, nil
}

func (s *strategyServer) Begin(ctx context.Context, r *pb.BeginRequest) (*pb.BeginResponse, error) {
	sim, err := decodeMatrix(r.GetSimilarity(), "", false)
	if err != nil {
		return nil, fmt.Errorf("similarity: %w", err)
	}
	s.mu.Lock()
	s.sh = Sharing{Dir: r.GetMatrixDir(), Limit: r.GetInlineLimit()}
	s.mu.Unlock()
	stages, err := s.impl.Begin(ctx, sdk.Run{
		Classes: fromClasses(r.GetClasses()), Similarity: sim,
		NumExamples: int(r.GetNumExamples()), Labels: fromInt32s(r.GetLabels()), Epochs: int(r.GetEpochs()),
		StepsPerEpoch: int(r.GetStepsPerEpoch()), Model: r.GetModel(), Params: r.GetParams(),
	})
	if err != nil {
		return nil, err
	}
	return &pb.BeginResponse{Stages: toStages(stages)}, nil
}

func (s *strategyServer) Plan(ctx context.Context, r *pb.PlanRequest) (*pb.Plan, error) {
	p, err := s.impl.Plan(ctx, sdk.PlanAt{Stage: int(r.GetStage()), Epoch: int(r.GetEpoch()), Step: int(r.GetStep()),
		ClassProbSums: r.GetClassProbSums(), ClassCounts: r.GetClassCounts()})
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("strategy returned no plan")
	}
	s.mu.Lock()
	sh := s.sh
	s.mu.Unlock()
	return toPlan(p, sh)
}

func (s *strategyServer) Observe(ctx context.Context, m *pb.Metrics) (*pb.Empty, error) {
	err := s.impl.Observe(ctx, sdk.Metrics{Stage: int(m.GetStage()), Epoch: int(m.GetEpoch()), Peer: int(m.GetModel()), Values: m.GetValues()})
	if err != nil {
		return nil, err
	}
	return &pb.Empty{}, nil
}

func (s *strategyServer) Features(st grpc.ClientStreamingServer[pb.FeatureChunk, pb.Empty]) error {
	if err := s.impl.Features(st.Context(), recvStream{st}); err != nil {
		return err
	}
	return st.SendAndClose(&pb.Empty{})
}

type recvStream struct {
	st grpc.ClientStreamingServer[pb.FeatureChunk, pb.Empty]
}

func (r recvStream) Next() (*sdk.FeatureChunk, error) {
	c, err := r.st.Recv()
	if err != nil {
		return nil, err // io.EOF at the end of the stream
	}
	return &sdk.FeatureChunk{Stage: int(c.GetStage()), Peer: int(c.GetModel()), Dim: int(c.GetDim()),
		Indices: fromInt32s(c.GetIndices()), Data: c.GetData()}, nil
}
