package wiki

import (
	"fmt"
	"strings"

	"github.com/lcl-project/lcl/wordnet"
)

// SpecError is OpenSource's error about the spec itself (an unknown kind, a
// missing path, options that do not apply), as opposed to a source that
// fails to open.
type SpecError struct{ msg string }

func (e *SpecError) Error() string { return e.msg }

func specErrorf(format string, a ...any) error { return &SpecError{fmt.Sprintf(format, a...)} }

// SourceOptions configure OpenSource; the zero value uses the defaults.
type SourceOptions struct {
	// Endpoint and UserAgent of the MediaWiki API (api); "" = the defaults.
	Endpoint, UserAgent string
	// Concurrency caps the API requests in flight (api; default 1).
	Concurrency int
	// Resolve tunes title resolution (api and dump).
	Resolve ResolveOptions
	// OverridesFile is an override file (ReadOverrides) added to
	// Resolve.Overrides. Overrides name Wikipedia titles: they are refused
	// for the wordnet and dir sources.
	OverridesFile string
	// Logf, if set, is told about slow steps (reading a dump's index, an
	// API request waiting to be retried).
	Logf func(format string, a ...any)
}

// SourceKinds are the spellings OpenSource accepts.
const SourceKinds = "wordnet, api, dump:PATH or dir:PATH"

// OpenSource opens the document source spec names: "wordnet" (documents
// built from WordNet), "api" (the MediaWiki Action API), "dump:PATH" (an
// offline …-pages-articles-multistream.xml.bz2 with its index next to it)
// or "dir:PATH" (the user's PATH/<wnid>.txt files). The caller closes it.
func OpenSource(spec string, wn *wordnet.DB, o SourceOptions) (Source, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	if (o.OverridesFile != "" || len(o.Resolve.Overrides) > 0) && (kind == "wordnet" || kind == "dir") {
		return nil, specErrorf("overrides name Wikipedia titles: they apply to the sources api and dump:PATH, not %s", kind)
	}
	switch kind {
	case "wordnet":
		return WordNetSource{WordNet: wn}, nil
	case "dir":
		if arg == "" {
			return nil, specErrorf("dir:PATH needs a folder of <wnid>.txt files")
		}
		return DirSource{Dir: arg, WordNet: wn}, nil
	case "api", "dump":
	default:
		return nil, specErrorf("unknown source %q: expected %s", spec, SourceKinds)
	}
	if kind == "dump" && arg == "" {
		return nil, specErrorf("dump:PATH needs the path of a …-pages-articles-multistream.xml.bz2")
	}
	ropts := o.Resolve
	if o.OverridesFile != "" {
		more, err := ReadOverrides(o.OverridesFile)
		if err != nil {
			return nil, err
		}
		ropts.Overrides = mergeOverrides(ropts.Overrides, more)
	}
	if kind == "api" {
		if o.Endpoint != "" {
			if err := CheckEndpoint(o.Endpoint); err != nil {
				return nil, fmt.Errorf("endpoint %q: %w", o.Endpoint, err)
			}
		}
		c := NewAPIClient(o.Endpoint)
		if o.UserAgent != "" {
			c.UserAgent = o.UserAgent
		}
		c.Concurrency = max(o.Concurrency, 1)
		c.Logf = o.Logf
		return &ArticleSource{Pages: c, WordNet: wn, Options: ropts}, nil
	}
	if o.Logf != nil {
		o.Logf("reading the index %s …", IndexPath(arg))
	}
	d, err := OpenDump(arg)
	if err != nil {
		return nil, err
	}
	return &ArticleSource{Pages: d, WordNet: wn, Options: ropts}, nil
}

// mergeOverrides returns a copy of a with b's entries added (b wins).
func mergeOverrides(a, b Overrides) Overrides {
	out := make(Overrides, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
