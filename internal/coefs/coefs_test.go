package coefs

import (
	"reflect"
	"testing"
)

func TestTermsSetFloat32s(t *testing.T) {
	c := Coefs{SoftCE: 1, HardCE: 2, KD: 3, KDTemperature: 4, Mutual: 5, Group: 6}
	want := []Term{{"soft_ce", "soft", 1}, {"hard_ce", "hard", 2}, {"kd", "kd", 3}, {"temperature", "kd_temp", 4},
		{"mutual", "mutual", 5}, {"group", "group", 6}}
	if got := c.Terms()[:len(want)]; !reflect.DeepEqual(got, want) {
		t.Errorf("Terms %v, want %v", got, want)
	}
	var back Coefs
	for _, term := range c.Terms() {
		if term.Proto == "" || term.C == "" {
			t.Errorf("term %+v lacks a name", term)
		}
		if err := back.Set(term.Proto, term.Value); err != nil {
			t.Fatal(err)
		}
	}
	if back != c {
		t.Errorf("Set from Terms gave %+v, want %+v", back, c)
	}
	if got := c.Float32s()[:6]; !reflect.DeepEqual(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("Float32s %v", got)
	}
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"soft_ce", true}, {"temperature", true}, {"SoftCE", false}, {"kd_temp", false}, {"", false}} {
		if err := back.Set(tt.name, 1); (err == nil) != tt.ok {
			t.Errorf("Set(%q): %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
