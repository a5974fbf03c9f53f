package plugins

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/plugins/internal/shim"
)

// Kinds of plugin, as in the executable name prefix lcl-KIND-NAME; the
// handshake shared with the SDK defines them (they name the plugin set).
const (
	KindStrategy   = shim.KindStrategy
	KindSimilarity = shim.KindSimilarity
)

// Found is a plugin executable found on the search path.
type Found struct {
	Kind, Name, Path string
	// Refused says why lcl will not run it (CheckTrusted's reason: the
	// file or a folder above it is writable by others, or owned by
	// someone else); "" when it may.
	Refused string
}

// SearchPath returns the plugin folders in search order: the entries of
// $LCL_PLUGIN_PATH (colon-separated), then ~/.lcl/plugins.
func SearchPath() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("LCL_PLUGIN_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".lcl", "plugins"))
	}
	return dirs
}

// Discover lists the executables named lcl-strategy-NAME or
// lcl-similarity-NAME in dirs, without running them. A name found in several
// folders is taken from the first (refused or not: a refused plugin is
// reported, never silently replaced by another); missing folders are
// skipped. Each is checked with CheckTrusted. The result is sorted by kind
// and name.
func Discover(dirs []string) []Found {
	seen := map[string]bool{}
	var out []Found
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			kind, name, ok := parseName(e.Name())
			if !ok || seen[kind+"/"+name] {
				continue
			}
			path := filepath.Join(dir, e.Name())
			info, err := os.Stat(path) // follows symlinks
			if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
				continue
			}
			seen[kind+"/"+name] = true
			f := Found{Kind: kind, Name: name, Path: path}
			if err := CheckTrusted(path); err != nil {
				f.Refused = err.Error()
			}
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind > out[j].Kind // strategy before similarity
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// parseName splits lcl-KIND-NAME[.ext]; the extension (.py, .exe, …) is not
// part of the name.
func parseName(file string) (kind, name string, ok bool) {
	for _, k := range []string{KindStrategy, KindSimilarity} {
		if rest, found := strings.CutPrefix(file, "lcl-"+k+"-"); found {
			if ext := filepath.Ext(rest); ext != "" {
				rest = strings.TrimSuffix(rest, ext)
			}
			if rest == "" || strings.HasPrefix(rest, ".") {
				return "", "", false
			}
			return k, rest, true
		}
	}
	return "", "", false
}
