package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/lcl-project/lcl/plugins/sdk"
)

// Source is a running similarity-source plugin. It implements
// sdk.SimilaritySource and checks that every matrix is C×C and finite.
type Source struct {
	name           string
	c              *conn
	impl           sdk.SimilaritySource
	timeout        time.Duration
	computeTimeout time.Duration
}

var _ sdk.SimilaritySource = (*Source)(nil)

// Source starts the similarity-source plugin name.
func (h *Host) Source(name string) (*Source, error) {
	c, raw, err := h.start(KindSimilarity, name)
	if err != nil {
		return nil, err
	}
	impl, ok := raw.(sdk.SimilaritySource)
	if !ok {
		c.kill()
		return nil, fmt.Errorf("%s: does not serve the similarity protocol", c.label)
	}
	return &Source{name: name, c: c, impl: impl, timeout: h.timeout(),
		computeTimeout: orDefault(h.ComputeTimeout, DefaultComputeTimeout)}, nil
}

// Name is the source's name as asked for.
func (s *Source) Name() string { return s.name }

// Label names the plugin in messages.
func (s *Source) Label() string { return s.c.label }

// Close stops the plugin process.
func (s *Source) Close() { s.c.kill() }

func (s *Source) Describe(ctx context.Context) (sdk.SourceInfo, error) {
	var info sdk.SourceInfo
	err := s.c.call(ctx, "Describe", s.timeout, func(ctx context.Context) (err error) {
		info, err = s.impl.Describe(ctx)
		return err
	})
	return info, err
}

func (s *Source) Compute(ctx context.Context, req sdk.SimilarityRequest) (*sdk.Matrix, error) {
	var m *sdk.Matrix
	err := s.c.call(ctx, "Compute", s.computeTimeout, func(ctx context.Context) (err error) {
		m, err = s.impl.Compute(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := sdk.ValidateSimilarity(m, len(req.Classes)); err != nil {
		return nil, s.c.invalid("Compute", "invalid matrix: %v", err)
	}
	return m, nil
}
