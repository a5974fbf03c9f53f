package plugins

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
)

// Pin is one line of the plugin lock file: the SHA-256 of a plugin
// executable as it was when `lcl plugins pin` checked it. The host then
// starts that plugin only if its file still has that digest (enforced by
// go-plugin's SecureConfig just before the process starts) and is still at
// that path.
type Pin struct {
	Kind, Name string
	SHA256     string // 64 lower-case hex digits
	Path       string
}

// Pins is the content of a lock file, by KIND/NAME.
type Pins map[string]Pin

// Get returns the pin of a plugin, if there is one.
func (p Pins) Get(kind, name string) (Pin, bool) {
	pin, ok := p[kind+"/"+name]
	return pin, ok
}

// LockPath is the plugin lock file: $LCL_PLUGIN_LOCK, else
// ~/.lcl/plugins.lock.
func LockPath() string {
	if p := os.Getenv("LCL_PLUGIN_LOCK"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".lcl", "plugins.lock")
	}
	return filepath.Join(home, ".lcl", "plugins.lock")
}

const lockHeader = "# lcl plugin pins, written by `lcl plugins pin`: KIND NAME SHA256 PATH\n"

// ReadPins reads a lock file; a missing file holds no pins. The file must
// pass CheckTrusted: whoever can change the pins can choose what runs.
func ReadPins(path string) (Pins, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Pins{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugin lock file: %w", err)
	}
	defer f.Close()
	if err := CheckTrusted(path); err != nil {
		return nil, fmt.Errorf("plugin lock file %s refused: %w", path, err)
	}
	return parsePins(f, path)
}

// parsePins reads the lock file format; path names it in errors.
func parsePins(r io.Reader, path string) (Pins, error) {
	pins := Pins{}
	sc := bounded.NewScanner(r, 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 || (f[0] != KindStrategy && f[0] != KindSimilarity) || f[1] == "" || !isHexSHA256(f[2]) || !filepath.IsAbs(f[3]) {
			return nil, fmt.Errorf("plugin lock file %s:%d: want \"KIND NAME SHA256 PATH\" (KIND strategy or similarity, 64 hex digits, an absolute path)", path, sc.Line())
		}
		key := f[0] + "/" + f[1]
		if _, dup := pins[key]; dup {
			return nil, fmt.Errorf("plugin lock file %s:%d: %s %s pinned twice", path, sc.Line(), f[0], f[1])
		}
		pins[key] = Pin{Kind: f[0], Name: f[1], SHA256: f[2], Path: f[3]}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("plugin lock file %s: %w", path, err)
	}
	return pins, nil
}

// WritePins replaces the lock file atomically (mode 0644, its folder made
// 0755 if missing).
func WritePins(path string, pins Pins) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	keys := make([]string, 0, len(pins))
	for k := range pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	_, err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if _, err := io.WriteString(w, lockHeader); err != nil {
			return err
		}
		for _, k := range keys {
			p := pins[k]
			if _, err := fmt.Fprintf(w, "%s %s %s %s\n", p.Kind, p.Name, p.SHA256, p.Path); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
