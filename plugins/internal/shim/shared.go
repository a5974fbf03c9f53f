package shim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lcl-project/lcl/internal/f32"
	sdk "github.com/lcl-project/lcl/plugins/internal/api"
	pb "github.com/lcl-project/lcl/plugins/proto"
)

// DefaultInlineLimit is the size in bytes above which a matrix travels in a
// shared file instead of inside a message: 64 MiB, a 4,096-class matrix.
// gRPC messages stay far below MaxMessageBytes.
const DefaultInlineLimit = 64 << 20

// maxSharedElements bounds a shared matrix (2³¹ values, 8 GiB).
const maxSharedElements = 1 << 31

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sharing says where matrices too large for a message go: a private folder
// (Dir, "" for none: every matrix inline) and the size above which a
// matrix is shared (Limit; 0 means DefaultInlineLimit).
type Sharing struct {
	Dir   string
	Limit int64
}

func (s Sharing) limit() int64 {
	if s.Limit > 0 {
		return s.Limit
	}
	return DefaultInlineLimit
}

// encodeMatrix is m as a message: inline when its values take at most the
// limit (or there is no folder), else written to a fresh file in the
// folder (a Fill matrix's rows computed a block at a time, eachRowBlock).
func encodeMatrix(m *sdk.Matrix, sh Sharing) (*pb.Matrix, error) {
	if m == nil {
		return nil, nil
	}
	n := int64(m.Rows) * int64(m.Cols)
	if sh.Dir == "" || 4*n <= sh.limit() {
		d := m.Dense()
		return &pb.Matrix{Rows: int32(m.Rows), Cols: int32(m.Cols), Data: d.Data}, nil
	}
	path, digest, err := writeShared(sh.Dir, m)
	if err != nil {
		return nil, err
	}
	return &pb.Matrix{Rows: int32(m.Rows), Cols: int32(m.Cols), Shared: &pb.SharedMatrix{Path: path, Digest: digest}}, nil
}

// writeShared writes m's values to a new file in dir and returns its path
// and CRC-32C digest. A failed write leaves no file.
func writeShared(dir string, m *sdk.Matrix) (path, digest string, err error) {
	if m.Rows < 0 || m.Cols < 0 || int64(m.Rows)*int64(m.Cols) > maxSharedElements {
		return "", "", fmt.Errorf("matrix of %d×%d values is not shareable", m.Rows, m.Cols)
	}
	if m.Data == nil && m.Fill == nil && m.Rows*m.Cols > 0 {
		return "", "", fmt.Errorf("matrix of %d×%d has neither values nor a row function", m.Rows, m.Cols)
	}
	if m.Data != nil && len(m.Data) != m.Rows*m.Cols {
		return "", "", fmt.Errorf("matrix is %d×%d with %d values", m.Rows, m.Cols, len(m.Data))
	}
	f, err := os.CreateTemp(dir, "matrix-*.f32")
	if err != nil {
		return "", "", fmt.Errorf("shared matrix: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var crc uint32
	var le []byte
	err = eachRowBlock(m, func(block []float32) error {
		b := f32.Bytes(block)
		if !f32.LittleEndian {
			le = le[:0]
			for _, x := range block {
				le = binary.LittleEndian.AppendUint32(le, math.Float32bits(x))
			}
			b = le
		}
		crc = crc32.Update(crc, castagnoli, b)
		_, err := f.Write(b) // blocks of MBs: no buffering needed
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("shared matrix: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", "", fmt.Errorf("shared matrix: %w", err)
	}
	return f.Name(), fmt.Sprintf("crc32c:%08x", crc), nil
}

// fillBlock is how many rows one goroutine computes at a time.
const fillBlock = 32

// eachRowBlock hands write m's rows in order, a block of rows at a time. A
// Fill matrix's rows are computed on every CPU, a block per goroutine, the
// next blocks while write takes the last ones.
func eachRowBlock(m *sdk.Matrix, write func(block []float32) error) error {
	if m.Data != nil || m.Fill == nil {
		for lo := 0; lo < m.Rows; lo += fillBlock {
			hi := min(lo+fillBlock, m.Rows)
			if err := write(m.Data[lo*m.Cols : hi*m.Cols]); err != nil {
				return err
			}
		}
		return nil
	}
	w := runtime.GOMAXPROCS(0)
	n := (m.Rows + fillBlock - 1) / fillBlock
	type block struct {
		i   int
		buf []float32
	}
	// Buffers circulate: free → a worker fills → ready (in any order) →
	// write (in order) → free. 2w buffers keep every worker busy while
	// one block is written.
	free := make(chan []float32, 2*w)
	for range 2 * w {
		free <- make([]float32, fillBlock*m.Cols)
	}
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	ready := make(chan block, 2*w)
	done := make(chan struct{})
	defer close(done)
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// A buffer first, then a block: every block taken has a
				// buffer, so the one write waits for is always under way.
				var buf []float32
				select {
				case buf = <-free:
				case <-done:
					return
				}
				i, ok := <-next
				if !ok {
					return
				}
				lo, hi := i*fillBlock, min(i*fillBlock+fillBlock, m.Rows)
				for r := lo; r < hi; r++ {
					m.Fill(r, buf[(r-lo)*m.Cols:(r-lo+1)*m.Cols])
				}
				select {
				case ready <- block{i, buf[:(hi-lo)*m.Cols]}:
				case <-done:
					return
				}
			}
		}()
	}
	pending := map[int][]float32{}
	for want := 0; want < n; {
		b := <-ready
		pending[b.i] = b.buf
		for buf, ok := pending[want]; ok; buf, ok = pending[want] {
			delete(pending, want)
			if err := write(buf); err != nil {
				return err // the workers stop at done
			}
			free <- buf[:cap(buf)]
			want++
		}
	}
	wg.Wait()
	return nil
}

// decodeMatrix is a message's matrix holding its values. A shared file is
// read whole into the result with its digest checked. From a plugin
// (fromPlugin: the host reading what a plugin returned) the file must be a
// regular file directly inside dir, the host's matrix folder, and it is
// removed once read; a plugin reads what the host sends where it is.
func decodeMatrix(pm *pb.Matrix, dir string, fromPlugin bool) (*sdk.Matrix, error) {
	return decodeMatrixInto(pm, dir, fromPlugin, nil)
}

// decodeMatrixInto is decodeMatrix reading a shared file into into when it
// has room (memory already paged in: a fresh 1.9 GB buffer costs half a
// million page faults, more than the copy itself).
func decodeMatrixInto(pm *pb.Matrix, dir string, fromPlugin bool, into []float32) (*sdk.Matrix, error) {
	if pm == nil {
		return nil, nil
	}
	m := &sdk.Matrix{Rows: int(pm.GetRows()), Cols: int(pm.GetCols()), Data: pm.GetData()}
	sh := pm.GetShared()
	if sh == nil {
		return m, nil
	}
	if fromPlugin {
		if dir == "" {
			return nil, fmt.Errorf("shared matrix %q, but the host gave no matrix folder", sh.GetPath())
		}
		if err := inDir(sh.GetPath(), dir); err != nil {
			return nil, err
		}
		defer os.Remove(sh.GetPath())
	}
	data, err := readShared(sh, m.Rows, m.Cols, fromPlugin, into)
	if err != nil {
		return nil, err
	}
	m.Data = data
	return m, nil
}

// inDir checks that path names a file directly inside dir.
func inDir(path, dir string) error {
	if !filepath.IsAbs(path) || filepath.Dir(filepath.Clean(path)) != filepath.Clean(dir) || filepath.Base(path) != filepath.Base(filepath.Clean(path)) {
		return fmt.Errorf("shared matrix %q is not a file of the matrix folder %s", path, dir)
	}
	return nil
}

// readShared reads a shared file of rows×cols float32 into into (when it
// has room, else a new slice), checking its size and digest. With consume
// (a file the reader removes afterwards) each part read is released at
// once (releaseRead).
func readShared(sh *pb.SharedMatrix, rows, cols int, consume bool, into []float32) ([]float32, error) {
	path := sh.GetPath()
	if rows < 0 || cols < 0 || int64(rows)*int64(cols) > maxSharedElements {
		return nil, fmt.Errorf("shared matrix %s: shape %d×%d", path, rows, cols)
	}
	check, want, err := digester(sh.GetDigest())
	if err != nil {
		return nil, fmt.Errorf("shared matrix %s: %w", path, err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("shared matrix: %w", err)
	}
	size := 4 * int64(rows) * int64(cols)
	if !st.Mode().IsRegular() || st.Size() != size {
		return nil, fmt.Errorf("shared matrix %s: %d bytes (%s), want %d for %d×%d float32", path, st.Size(), st.Mode().Type(), size, rows, cols)
	}
	flag := os.O_RDONLY
	if consume {
		flag = os.O_RDWR // to punch holes
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("shared matrix: %w", err)
	}
	defer f.Close()
	data := into
	if cap(data) < rows*cols {
		data = make([]float32, rows*cols)
	}
	data = data[:rows*cols]
	raw := f32.Bytes(data)
	// Parts of 4 MiB read on every CPU (the copy and the page faults of a
	// 1.9 GB matrix are most of its reading), then one digest pass.
	const part = 4 << 20
	parts := (len(raw) + part - 1) / part
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for k := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := int(next.Add(1) - 1)
				if p >= parts {
					return
				}
				off := p * part
				n, err := f.ReadAt(raw[off:min(off+part, len(raw))], int64(off))
				if err != nil && !(err == io.EOF && off+n == len(raw)) {
					errs[k] = fmt.Errorf("shared matrix %s: %w", path, err)
					return
				}
				if consume {
					releaseRead(f, int64(off), int64(n))
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	check.Write(raw)
	if got := hex.EncodeToString(check.Sum(nil)); got != want {
		return nil, fmt.Errorf("shared matrix %s: digest %s, the message says %s", path, got, want)
	}
	if !f32.LittleEndian {
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return data, nil
}

// digester returns the hash a digest names and its expected hex value.
func digester(d string) (hash.Hash, string, error) {
	alg, hexSum, _ := strings.Cut(d, ":")
	switch {
	case alg == "crc32c" && len(hexSum) == 8:
		return crc32.New(castagnoli), strings.ToLower(hexSum), nil
	case alg == "sha256" && len(hexSum) == 64:
		return sha256.New(), strings.ToLower(hexSum), nil
	}
	return nil, "", fmt.Errorf("digest %q: want crc32c:<8 hex digits> or sha256:<64 hex digits>", d)
}
