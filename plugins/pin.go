package plugins

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lcl-project/lcl/internal/atomicfile"
	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/digest"
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

// PinFound pins the plugins found in dirs (Discover) into the lock file at
// lock: every one when names is empty (the file is rewritten with them),
// else those named NAME or KIND/NAME (their lines change, the others stay).
// A refused plugin (CheckTrusted) is not pinned: it is an error, as is a
// name no plugin in dirs has. It returns the pins written and how many the
// file holds.
func PinFound(lock string, dirs, names []string) (pinned []Pin, total int, err error) {
	pins := Pins{}
	if len(names) > 0 {
		if pins, err = ReadPins(lock); err != nil {
			return nil, 0, err
		}
	}
	for _, fd := range Discover(dirs) {
		if len(names) > 0 && !slices.Contains(names, fd.Name) && !slices.Contains(names, fd.Kind+"/"+fd.Name) {
			continue
		}
		if fd.Refused != "" {
			return nil, 0, fmt.Errorf("%s plugin %q (%s): refused, not pinned: %s", fd.Kind, fd.Name, fd.Path, fd.Refused)
		}
		abs, err := filepath.Abs(fd.Path)
		if err != nil {
			return nil, 0, err
		}
		sum, err := digest.File(abs)
		if err != nil {
			return nil, 0, fmt.Errorf("%s plugin %q: %w", fd.Kind, fd.Name, err)
		}
		p := Pin{Kind: fd.Kind, Name: fd.Name, SHA256: sum, Path: abs}
		pins[fd.Kind+"/"+fd.Name] = p
		pinned = append(pinned, p)
	}
	for _, n := range names {
		if !slices.ContainsFunc(pinned, func(p Pin) bool { return n == p.Name || n == p.Kind+"/"+p.Name }) {
			return nil, 0, fmt.Errorf("no plugin %q on the search path %s (built-ins are part of lcl and need no pin)", n, strings.Join(dirs, ":"))
		}
	}
	if err := WritePins(lock, pins); err != nil {
		return nil, 0, fmt.Errorf("plugin lock file: %w", err)
	}
	return pinned, len(pins), nil
}
