// Package layering states the import floors of lcl; its test fails when a
// package imports one on a higher floor. Each floor may import its own and
// lower floors, never a higher one, so the pipeline reads bottom-up:
//
//	0  labels, wordnet, simstore, internal/…   data, the store, helpers
//	1  wiki                                    class documents
//	2  embed                                   doc2vec class vectors
//	3  similarity                              class similarity matrices
//	4  curriculum, plugins                     strategies and their protocol
//	5  trainer (+torch, data, models, safetensors, launch)   the engine
//	6  experiment                              grids of runs
//	7  report                                  tables, statistics, figures
//	8  cmd, bench, examples                    programs
package layering

// Floors maps a package path prefix (relative to the module, whole path
// segments) to its floor; the longest matching prefix wins.
func Floors() map[string]int {
	return map[string]int{
		"labels":     0,
		"wordnet":    0,
		"simstore":   0,
		"internal":   0,
		"wiki":       1,
		"embed":      2,
		"similarity": 3,
		"curriculum": 4,
		"plugins":    4,
		"trainer":    5,
		"experiment": 6,
		"report":     7,
		"cmd":        8,
		"bench":      8,
		"examples":   8,
	}
}
