package embed

// prefetch asks the CPU to bring the n float32 at p into cache. Training is
// bound by cache misses on randomly drawn output rows, so rows are
// prefetched one pair ahead.
//
//go:noescape
func prefetch(p *float32, n int)
