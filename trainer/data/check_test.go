package data

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		spec, err string
	}{
		{"synthetic?n=8&classes=2&shape=1,4,4", ""},
		{"synthetic", ""},
		{"cifar100:" + dir + "?labels=coarse", ""},
		{"folder:" + dir, ""},
		{"synthetic?n=0", "want all positive"},
		{"synthetic?colour=red", "unknown key"},
		{"cifar100", "want cifar100:DIR"},
		{"cifar100:" + filepath.Join(dir, "missing"), "no such file"},
		{"imagenet-21k:" + dir, "unknown data set kind"},
		{"cifar10:" + dir + "?pad=x", "pad=x"},
	} {
		err := Check(tt.spec)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Check(%q) = %v, want %q", tt.spec, err, tt.err)
		}
	}
}
