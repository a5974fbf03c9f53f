package models

import (
	"archive/zip"
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/lcl-project/lcl/internal/bounded"
	"github.com/lcl-project/lcl/internal/digest"
	"github.com/lcl-project/lcl/internal/trust"
)

// A TorchScript file is a program: its code runs as the user who runs lcl,
// some of it while the file loads (a class's __setstate__). So before
// libtorch opens one, lcl treats it as it treats a plugin: the file and
// the folders above it must pass trust.Check; a digest pinned in the model
// name ("torchscript:m.pt@sha256:HEX") must match; the zip archive must
// declare sizes within bounds (tensor data stored, as PyTorch writes it,
// so no entry inflates beyond the file); and its code must call no
// operator that reaches the file system, the network or the terminal
// unless the registry trusts scripts (--trust-model). torch.LoadScript
// then loads it, once, scans the loaded graphs (the authoritative check)
// and runs forward once in each mode; the run's models are copies of that
// module (torch.Spec.Loaded).

// pinPrefix starts a digest pinned to a TorchScript file name.
const pinPrefix = "@sha256:"

// scriptRef is a "torchscript:PATH[@sha256:HEX]" spec, without its prefix.
type scriptRef struct {
	path, sha256 string
}

func parseScriptRef(s string) (scriptRef, error) {
	if i := strings.LastIndex(s, pinPrefix); i >= 0 {
		sum := s[i+len(pinPrefix):]
		if _, err := hex.DecodeString(sum); err != nil || len(sum) != 64 {
			return scriptRef{}, fmt.Errorf("pinned digest %q: want 64 hex digits (sha256sum FILE)", sum)
		}
		return scriptRef{path: s[:i], sha256: strings.ToLower(sum)}, nil
	}
	return scriptRef{path: s}, nil
}

// Archive bounds: every compressed entry (code, debug information) and
// their sum; tensor data and pickles must be stored uncompressed, so
// their size is bounded by the file's.
const (
	maxScriptEntry = 64 << 20
	maxScriptCode  = 256 << 20
)

// checkScriptFile runs the checks that need no libtorch, in the order that
// costs least first: trust, pin, archive, code.
func checkScriptFile(ref scriptRef, trustOps bool) error {
	if err := trust.Check(ref.path); err != nil {
		return fmt.Errorf("refused: %w (a TorchScript model is a program; the rule is a plugin's)", err)
	}
	f, err := bounded.OpenRegular(ref.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if ref.sha256 != "" {
		sum, err := digest.Reader(f)
		if err != nil {
			return err
		}
		if sum != ref.sha256 {
			return fmt.Errorf("refused: its SHA-256 is %s, not the pinned %s", sum, ref.sha256)
		}
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return fmt.Errorf("not a TorchScript archive (torch.jit.save writes a zip file): %v", err)
	}
	var code int64
	for _, e := range zr.File {
		name := bounded.Quote(e.Name)
		if e.Method == zip.Store {
			if e.UncompressedSize64 != e.CompressedSize64 {
				return fmt.Errorf("archive entry %s declares %d bytes stored in %d", name, e.UncompressedSize64, e.CompressedSize64)
			}
			continue
		}
		if isTensorData(e.Name) {
			return fmt.Errorf("archive entry %s is compressed (%s from %s): PyTorch stores tensor data uncompressed, and lcl does not inflate it", name,
				bounded.Bytes(int64(min(e.UncompressedSize64, 1<<62))), bounded.Bytes(int64(min(e.CompressedSize64, 1<<62))))
		}
		if e.UncompressedSize64 > maxScriptEntry {
			return fmt.Errorf("archive entry %s inflates to %s: want at most %s", name, bounded.Bytes(int64(min(e.UncompressedSize64, 1<<62))), bounded.Bytes(maxScriptEntry))
		}
		if code += int64(e.UncompressedSize64); code > maxScriptCode {
			return fmt.Errorf("archive entries inflate to more than %s together", bounded.Bytes(maxScriptCode))
		}
	}
	if trustOps {
		return nil
	}
	for _, e := range zr.File {
		if !isCode(e.Name) {
			continue
		}
		if err := scanCode(e); err != nil {
			return err
		}
	}
	return nil
}

// isTensorData: the entries PyTorch writes uncompressed (data/N, the pickles).
func isTensorData(name string) bool {
	return strings.Contains(name, "/data/") || strings.HasSuffix(name, ".pkl")
}

// isCode: the TorchScript source the loader compiles (code/…/*.py).
func isCode(name string) bool {
	return strings.Contains(name, "/code/") && strings.HasSuffix(name, ".py")
}

var (
	// strings and comments of serialized TorchScript code: not calls
	codeNoise = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#.*`)
	// calls that reach outside the process, as the serializer spells them
	ioCall = regexp.MustCompile(`\btorch\.(?:from_file|save|load)\b|\bops\.(?:aten|prim)\.(?:from_file|save|to_here|rpc_async|rpc_sync|rpc_remote|Print)\b|\b(?:rpc_async|rpc_sync|rpc_remote|to_here)\s*\(|(?:^|[^.\w])print\s*\(`)
	// custom operators: ops.NAMESPACE.NAME
	opsCall = regexp.MustCompile(`\bops\.(\w+)\.`)
	// libtorch's own operator namespaces (as lt_script_load's)
	ownNamespaces = map[string]bool{"aten": true, "prim": true, "quantized": true, "_quantized": true, "prepacked": true,
		"mkldnn_prepacked": true, "sparse": true}
)

// scanCode refuses a code file that calls an operator reaching outside the
// process. It runs before libtorch loads the archive, because loading runs
// __setstate__: the graph scan after loading would come too late for it.
func scanCode(e *zip.File) error {
	rc, err := e.Open()
	if err != nil {
		return fmt.Errorf("archive entry %s: %v", bounded.Quote(e.Name), err)
	}
	defer rc.Close()
	sc := bounded.NewScanner(bufio.NewReader(io.LimitReader(rc, maxScriptEntry)), 1<<20)
	for sc.Scan() {
		line := codeNoise.ReplaceAllString(sc.Text(), `""`)
		call := ioCall.FindString(line)
		if call == "" {
			for _, m := range opsCall.FindAllStringSubmatch(line, -1) {
				if !ownNamespaces[m[1]] {
					call = strings.TrimSuffix(m[0], ".")
					break
				}
			}
		}
		if call != "" {
			return fmt.Errorf("%s:%d calls %s, which reaches the file system, the network or the terminal (or is not libtorch's); refused (a TorchScript model is a program: --trust-model runs it anyway)",
				bounded.Quote(e.Name), sc.Line(), strings.TrimSpace(strings.TrimRight(call, "( ")))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("archive entry %s: %w", bounded.Quote(e.Name), err)
	}
	return nil
}
