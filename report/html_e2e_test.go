//go:build e2e

package report

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lcl-project/lcl/internal/testdep"
)

// TestHTMLRendersInChromium opens the self-contained report in headless
// Chromium and checks the screenshot shows the tables (dark text near the
// top) and the plots (saturated plot colours further down).
func TestHTMLRendersInChromium(t *testing.T) {
	browser := testdep.Program(t, "chromium")
	r := buildFake(t)
	if err := r.AddPlots(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1200,9000",
		"file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	if keep := os.Getenv("LCL_KEEP_SCREENSHOT"); keep != "" {
		raw, _ := os.ReadFile(shot)
		os.WriteFile(keep, raw, 0o644)
	}
	sf, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	img, err := png.Decode(sf)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != 1200 {
		t.Fatalf("screenshot %v", b)
	}
	dark := count(img, image.Rect(0, 0, b.Dx(), 600), func(r, g, bl uint32) bool { return r < 0x4000 && g < 0x4000 && bl < 0x4000 })
	if dark < 2000 {
		t.Errorf("only %d dark pixels at the top: the tables did not render", dark)
	}
	// plotutil's first colours are saturated red, green and blue lines.
	coloured := count(img, b, func(r, g, bl uint32) bool {
		hi, lo := max(r, g, bl), min(r, g, bl)
		return hi-lo > 0x6000
	})
	if coloured < 5000 {
		t.Errorf("only %d saturated pixels: the embedded plots did not render", coloured)
	}
}

func count(img image.Image, rect image.Rectangle, keep func(r, g, b uint32) bool) int {
	n := 0
	rect = rect.Intersect(img.Bounds())
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if keep(r, g, b) {
				n++
			}
		}
	}
	return n
}
