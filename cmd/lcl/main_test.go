package main

import "testing"

// Only help and the version skip the supervisor and libtorch's settings;
// every command that may train (or that printsOnly cannot read) does not.
func TestPrintsOnly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"version"}, true},
		{[]string{"--json", "version"}, true},
		{[]string{"--store", "/s", "version"}, true},
		{[]string{"--help"}, true},
		{[]string{"help", "train"}, true},
		{[]string{"train", "--help"}, true},
		{[]string{"train", "-h"}, true},
		{[]string{"completion", "bash"}, true},
		{[]string{"train", "--synsets", "fashion-mnist"}, false},
		{[]string{"--store", "version", "train"}, false}, // a store folder named version
		{[]string{"experiment", "run", "grid.yaml"}, false},
		{[]string{"plugins", "serve", "--", "--help"}, false},
		{[]string{"--quiet"}, true},
		{[]string{"models"}, false},
	} {
		if got := printsOnly(tc.args); got != tc.want {
			t.Errorf("printsOnly(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
