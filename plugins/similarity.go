package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/labels"
	"github.com/lcl-project/lcl/plugins/sdk"
	"github.com/lcl-project/lcl/similarity"
)

// SimilaritySource is a running similarity plugin as a similarity.Source:
// `lcl similarity --source NAME` computes, checks, normalises and caches
// its matrix as it does a built-in's. As a similarity.Preparer it names the
// matrix before computing it: its effective parameters (the plugin's
// declared defaults filled in) and the digests of its inputs (the classes,
// the label set's attributes and hierarchy as sent, and the plugin itself:
// its version and the SHA-256 of its executable).
type SimilaritySource struct {
	*Source
	info   sdk.SourceInfo
	plugin string // the plugin's input digest
}

var (
	_ similarity.Source   = (*SimilaritySource)(nil)
	_ similarity.Preparer = (*SimilaritySource)(nil)
)

// SimilaritySource starts the similarity plugin name and asks it what it is.
func (h *Host) SimilaritySource(ctx context.Context, name string) (*SimilaritySource, error) {
	where, err := h.Resolve(KindSimilarity, name)
	if err != nil {
		return nil, err
	}
	src, err := h.Source(name)
	if err != nil {
		return nil, err
	}
	info, err := src.Describe(ctx)
	if err != nil {
		src.Close()
		return nil, err
	}
	plugin := where + " " + info.Version
	if where != "built-in" {
		d, err := digest.File(where)
		if err != nil {
			src.Close()
			return nil, err
		}
		plugin = info.Version + " sha256:" + d
	}
	return &SimilaritySource{Source: src, info: info, plugin: plugin}, nil
}

// Info is what the plugin said about itself.
func (s *SimilaritySource) Info() sdk.SourceInfo { return s.info }

// Prepare implements similarity.Preparer.
func (s *SimilaritySource) Prepare(_ context.Context, set *labels.Set, params map[string]string) (similarity.Provenance, error) {
	declared := map[string]sdk.Param{}
	var known []string
	for _, p := range s.info.Params {
		declared[p.Name] = p
		known = append(known, p.Name)
	}
	var unknown []string
	for k := range params {
		if _, ok := declared[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		takes := "none"
		if len(known) > 0 {
			takes = strings.Join(known, ", ")
		}
		return similarity.Provenance{}, fmt.Errorf("unknown parameter(s) %s (%s takes: %s)", strings.Join(unknown, ", "), s.Label(), takes)
	}
	effective := map[string]string{}
	for _, p := range s.info.Params {
		if v := strings.TrimSpace(params[p.Name]); v != "" {
			effective[p.Name] = v
		} else if p.Default != "" {
			effective[p.Name] = p.Default
		}
	}
	// The label set as the request carries it, beyond its classes.
	h := sha256.New()
	req := SimilarityRequest(set, nil)
	for _, a := range req.Attributes {
		fmt.Fprintf(h, "attributes %s %q\n", a.Name, a.Names)
		for _, x := range a.Values.Data {
			h.Write([]byte(strconv.FormatFloat(float64(x), 'g', -1, 32) + " "))
		}
		h.Write([]byte("\n"))
	}
	for _, n := range req.Hierarchy {
		fmt.Fprintf(h, "node %q %q %q\n", n.ID, n.Name, n.Parent)
	}
	sum := h.Sum(nil)
	return similarity.Provenance{Params: effective, Inputs: map[string]string{
		"classes": similarity.ClassesDigest(set), "label_set": hex.EncodeToString(sum[:]), "plugin": s.plugin}}, nil
}

// Compute implements similarity.Source: the plugin's matrix, with the
// effective parameters and input digests (similarity.Compute checks and
// normalises it).
func (s *SimilaritySource) Compute(ctx context.Context, set *labels.Set, params map[string]string) (*similarity.Result, error) {
	prov, err := s.Prepare(ctx, set, params)
	if err != nil {
		return nil, err
	}
	m, err := s.Source.Compute(ctx, SimilarityRequest(set, params))
	if err != nil {
		return nil, err
	}
	return &similarity.Result{Classes: similarity.ClassIDs(set), Data: m.Data, Provenance: prov,
		Notes: []string{"computed by " + s.Label()}}, nil
}

// SimilarityRequest is the request for a label set's matrix: its classes,
// attribute tables (sorted by name) and hierarchy.
func SimilarityRequest(set *labels.Set, params map[string]string) sdk.SimilarityRequest {
	req := sdk.SimilarityRequest{LabelSet: set.Name, Params: params}
	for _, c := range set.Classes {
		req.Classes = append(req.Classes, sdk.Class{Index: c.Index, ID: c.ID, Name: c.Name, WNID: c.WNID})
	}
	names := make([]string, 0, len(set.Attributes))
	for n := range set.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := set.Attributes[n]
		m := sdk.NewMatrix(len(a.Values), len(a.Names))
		for i, row := range a.Values {
			for j, x := range row {
				m.Set(i, j, float32(x))
			}
		}
		req.Attributes = append(req.Attributes, sdk.Attributes{Name: n, Names: a.Names, Values: m})
	}
	for _, n := range set.Hierarchy {
		req.Hierarchy = append(req.Hierarchy, sdk.Node{ID: n.ID, Name: n.Name, Parent: n.Parent})
	}
	return req
}
