package embed

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t\n", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"great_white_shark", []string{"great", "white", "shark"}},
		{"x-ray and X-RAYS", []string{"x", "ray", "and", "x", "rays"}},
		{"don't stop", []string{"don't", "stop"}},
		{"O’Brien's dog", []string{"o'brien's", "dog"}},
		{"'quoted' words'", []string{"quoted", "words"}},
		{"rock 'n' roll", []string{"rock", "n", "roll"}},
		{"1,000 km/h in 2020", []string{"1", "000", "km", "h", "in", "2020"}},
		{"ÉCOLE Straße ΣΟΦΊΑ", []string{"école", "straße", "σοφία"}},
		{"cafe\u0301 au lait", []string{"cafe\u0301", "au", "lait"}},
		{"東京タワー is tall", []string{"東京タワー", "is", "tall"}},
		{"(a dog; \"a cat\")", []string{"a", "dog", "a", "cat"}},
		{"emoji🙂between", []string{"emoji", "between"}},
		{"tab\tsep\u00a0nbsp", []string{"tab", "sep", "nbsp"}},
		{"٣ arabic-indic digits", []string{"٣", "arabic", "indic", "digits"}},
		{"\xff invalid utf8", []string{"invalid", "utf8"}},
	}
	for _, tt := range tests {
		if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
