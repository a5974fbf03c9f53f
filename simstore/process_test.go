package simstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHelperProcess is not a test: the tests below re-run the test binary
// with LCL_SIMSTORE_HELPER set to act as a second process on a store.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("LCL_SIMSTORE_HELPER")
	if mode == "" {
		return
	}
	dir := os.Getenv("LCL_SIMSTORE_DIR")
	err := func() error {
		switch mode {
		case "hold": // open the store and keep it until stdin closes
			s, err := Open(dir)
			if err != nil {
				return err
			}
			fmt.Println("ready")
			io.Copy(io.Discard, os.Stdin)
			return s.Close()
		case "holdro": // open the store read-only and keep it until stdin closes
			s, err := Open(dir, ReadOnly())
			if err != nil {
				return err
			}
			fmt.Println("ready")
			io.Copy(io.Discard, os.Stdin)
			return s.Close()
		case "articles": // store articles one by one until killed; "wrote" after 20
			s, err := Open(dir)
			if err != nil {
				return err
			}
			for i := 0; ; i++ {
				if err := s.PutArticles(context.Background(), Article{LabelSet: "k", ClassID: fmt.Sprint("c", i), Text: fmt.Sprint("text ", i)}); err != nil {
					return err
				}
				if i == 19 {
					fmt.Println("wrote")
				}
			}
		case "write": // rewrite a large matrix, alternating versions, until killed
			s, err := Open(dir, withChunkSize(256<<10))
			if err != nil {
				return err
			}
			for i := 1; ; i++ {
				if _, err := s.PutMatrix(context.Background(), killMatrix(i%2)); err != nil {
					return err
				}
				if i == 1 {
					fmt.Println("wrote")
				}
			}
		}
		return fmt.Errorf("unknown helper mode %q", mode)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helper(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "LCL_SIMSTORE_HELPER="+mode, "LCL_SIMSTORE_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), in
}

func waitLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("helper said %q (%v), want %q", line, err, want)
	}
}

func TestSecondProcessGetsLockedError(t *testing.T) {
	dir := t.TempDir()
	cmd, out, in := helper(t, "hold", dir)
	waitLine(t, out, "ready")

	s, err := Open(dir)
	if err == nil {
		s.Close()
		t.Fatal("second Open of a store in use succeeded")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %q, want one line wrapping ErrLocked and naming %s", err, dir)
	}
	if _, err := Open(dir, ReadOnly()); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open of a store in use: %v, want ErrLocked", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("open after the holder closed: %v", err)
	}
	s.Close()
}

// killMatrix is version v (0 or 1) of a 1000×1000 matrix (4 MB, 16 chunks of
// 256 KiB in the writer).
func killMatrix(v int) Matrix {
	return squareMatrix(1000, func(i int) float32 { return float32(i%977) + float32(v)*0.5 })
}

func TestKillDuringWriteKeepsOldOrNew(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.PutMatrix(context.Background(), killMatrix(0))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	versions := [][]float32{killMatrix(0).Data, killMatrix(1).Data}
	for iter := range 3 {
		cmd, out, _ := helper(t, "write", dir)
		waitLine(t, out, "wrote")
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		s, err := Open(dir)
		if err != nil {
			t.Fatalf("iteration %d: open after kill -9: %v", iter, err)
		}
		m, err := s.GetMatrixByKey(context.Background(), key)
		if err != nil {
			s.Close()
			t.Fatalf("iteration %d: read after kill -9: %v", iter, err)
		}
		if !sameBits(m.Data, versions[0]) && !sameBits(m.Data, versions[1]) {
			t.Fatalf("iteration %d: matrix after kill -9 is neither the old nor the new version", iter)
		}
		if n, p := countPrefix(t, s, prefixChunk+"/"), countPrefix(t, s, prefixPending); n != 16 || p != 0 {
			t.Errorf("iteration %d: %d chunks and %d pending marks after recovery, want 16 and 0", iter, n, p)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
