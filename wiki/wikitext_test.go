package wiki

import (
	"reflect"
	"testing"
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
