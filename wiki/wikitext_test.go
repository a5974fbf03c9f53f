package wiki

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCleanWikitext(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"links", "The '''crane''' is a [[bird]] of the [[Gruidae|crane family]].", "The crane is a bird of the crane family."},
		{"pipe trick", "See [[Crane (bird)|]].", "See Crane."},
		{"nested templates", "A{{Infobox|name={{lang|la|Grus}}|x=1}} bird{{cn}}.", "A bird."},
		{"refs", `Tall<ref name="a">Smith, p. 3 [[Book]]</ref> birds<ref name="a"/>.`, "Tall birds."},
		{"comments", "Cranes<!-- hidden [[x]] --> fly.", "Cranes fly."},
		{"table", "Before\n{| class=wikitable\n|-\n| a || b\n{|\n| nested\n|}\n|}\nAfter", "Before\nAfter"},
		{"file with nested link", "[[File:Grus.jpg|thumb|A [[crane]] in flight]]Cranes fly.", "Cranes fly."},
		{"image", "[[Image:x.png|left]]Text", "Text"},
		{"categories and interlanguage", "Text.\n[[Category:Birds]]\n[[de:Kraniche]]", "Text."},
		{"bold italic", "'''''Grus''''' and ''Balearica''", "Grus and Balearica"},
		{"headings", "Lead.\n\n== Description ==\nBody.\n=== Size ===\nBig.", "Lead.\n\nDescription\nBody.\nSize\nBig."},
		{"external links", "See [https://example.org the site] and [https://x.org].", "See the site and ."},
		{"lists and entities", "* one&nbsp;two\n# three &amp; four", "one\u00a0two\nthree & four"},
		{"html tags and magic words", "__NOTOC__A<br/>b <small>c</small>", "Ab c"},
		{"blank lines collapse", "a\n\n\n\nb", "a\n\nb"},
		{"unclosed template runs to end", "a {{broken", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CleanWikitext(tt.in); got != tt.want {
				t.Errorf("CleanWikitext(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWikiLinksRedirectDisambiguation(t *testing.T) {
	text := "'''Crane''' may refer to:\n* [[Crane (bird)]], a bird\n* [[Crane (machine)|a machine]]\n* [[crane_fly#Larvae|Crane fly]]\n[[File:x.jpg]] [[Category:Disambiguation pages]]\n{{disambiguation}}"
	if got, want := WikiLinks(text), []string{"Crane (bird)", "Crane (machine)", "Crane fly"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WikiLinks = %q, want %q", got, want)
	}
	if !IsDisambiguationWikitext(text) {
		t.Error("IsDisambiguationWikitext = false for a page with {{disambiguation}}")
	}
	if IsDisambiguationWikitext("A bird. {{Taxobox|x}}") {
		t.Error("IsDisambiguationWikitext = true for an article")
	}
	for _, tt := range []struct {
		in, target string
		ok         bool
	}{
		{"#REDIRECT [[Crane (bird)]]", "Crane (bird)", true},
		{"#redirect:[[mouse_(rodent)#x|y]]\n{{R from move}}", "Mouse (rodent)", true},
		{"Crane is a bird. #REDIRECT [[x]]", "", false},
	} {
		got, ok := RedirectTarget(tt.in)
		if got != tt.target || ok != tt.ok {
			t.Errorf("RedirectTarget(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.target, tt.ok)
		}
	}
	if got := LeadSection("Lead [[x]].\nMore.\n== H ==\nBody"); got != "Lead [[x]].\nMore.\n" {
		t.Errorf("LeadSection = %q", got)
	}
	if got := NormalizeTitle("  écureuil_roux  x"); got != "Écureuil roux x" {
		t.Errorf("NormalizeTitle = %q", got)
	}
}

// Unclosed and deeply nested links used to make cleaning quadratic (120 KB
// took 0.6 s, 2 MB minutes). Cleaning is now one pass: these 4 MB pages take
// well under a second each (the bound leaves room for a loaded machine).
func TestCleanWikitextLinear(t *testing.T) {
	const n = 4 << 20
	for name, in := range map[string]string{
		"unclosed":       strings.Repeat("[[a ", n/4),
		"nested piped":   strings.Repeat("[[a|", n/4) + strings.Repeat("]]", n/4),
		"nested":         strings.Repeat("[[", n/4) + strings.Repeat("]]", n/4),
		"closes only":    strings.Repeat("]]", n/2),
		"file captions":  strings.Repeat("[[File:x|[[a|[[b|", n/17),
		"templates":      strings.Repeat("{{", n/2),
		"comments, refs": strings.Repeat("<!--<ref>", n/9),
		"tables":         strings.Repeat("{|\n", n/3),
	} {
		start := time.Now()
		out := CleanWikitext(in)
		links := WikiLinks(in)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
		if len(out) > len(in) || len(links) > len(in) {
			t.Errorf("%s: output longer than the input", name)
		}
	}
	if got := CleanWikitext("[[a|[[b|c]] d"); got != "a|c d" {
		t.Errorf("unclosed outer link: %q", got)
	}
	if got := CleanWikitext(strings.Repeat("[[x|", 16) + "deep" + strings.Repeat("]]", 16)); got != "deep" {
		t.Errorf("links nested 16 deep: %q, want the innermost label", got)
	}
	// Deeper brackets are dropped, their text kept.
	if got := CleanWikitext(strings.Repeat("[[x|", 18) + "deep" + strings.Repeat("]]", 18)); got != "x|x|deep" {
		t.Errorf("links nested 18 deep: %q", got)
	}
}

// FuzzCleanWikitext: no wikitext panics cleaning or link extraction, and
// cleaning never makes text longer.
func FuzzCleanWikitext(f *testing.F) {
	for _, s := range []string{
		"The '''crane''' is a [[bird]] of the [[Gruidae|crane family]].",
		"[[File:Grus.jpg|thumb|A [[crane]] in flight]]Cranes fly.",
		"See [[Crane (bird)|]]. {{Infobox|a={{b}}}}<ref>x</ref>",
		"{|\n| a\n|}\n== H ==\n* [[a#b|c]] [[:d]] [[de:x]]",
		"[[a|[[b|c]] d ]] ]] [[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if out := CleanWikitext(s); len(out) > len(s) {
			t.Fatalf("CleanWikitext(%q) = %q is longer", s, out)
		}
		WikiLinks(s)
		LeadSection(s)
		RedirectTarget(s)
	})
}
