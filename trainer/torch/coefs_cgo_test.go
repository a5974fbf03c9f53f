//go:build cgo

package torch

import (
	"reflect"
	"testing"
)

// lt_coefs is as many floats as Coefs has fields: cCoefs' copy relies on it
// (TestCoefsMatchHeader checks the names and their order).
func TestCCoefsSize(t *testing.T) {
	if got, want := cCoefsLen(), reflect.TypeOf(Coefs{}).NumField(); got != want {
		t.Fatalf("lt_coefs holds %d floats, Coefs has %d fields", got, want)
	}
}
