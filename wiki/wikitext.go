package wiki

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanWikitext turns MediaWiki wikitext into plain text: HTML comments,
// <ref> footnotes, templates ({{…}}, nested), tables ({|…|}, nested),
// file/image links and their captions, categories and interlanguage links are
// removed; [[target|label]] becomes label and [[target]] becomes target;
// external links keep their label; bold/italic quotes, heading marks, list
// marks, magic words and remaining HTML tags are dropped (their text kept);
// HTML entities are decoded. Headings stay as lines of their own. Runs of
// blank lines collapse to one.
func CleanWikitext(s string) string {
	s = commentRE.ReplaceAllString(s, "")
	s = refRE.ReplaceAllString(s, "")
	s = refSelfRE.ReplaceAllString(s, "")
	s = dropTagBlockRE.ReplaceAllString(s, "")
	s = removeNested(s, "{{", "}}")
	s = removeTables(s)
	s = replaceLinks(s)
	s = extLinkLabelRE.ReplaceAllString(s, "$1")
	s = extLinkBareRE.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "'''", "")
	s = strings.ReplaceAll(s, "''", "")
	s = tagRE.ReplaceAllString(s, "")
	s = magicRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if h := headingRE.FindStringSubmatch(line); h != nil {
			line = strings.TrimSpace(h[1])
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "*#:;"))
		line = spacesRE.ReplaceAllString(line, " ")
		if line == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, line)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

var (
	commentRE      = regexp.MustCompile(`(?s)<!--.*?(-->|$)`)
	refRE          = regexp.MustCompile(`(?is)<ref(\s[^>]*)?>.*?</ref\s*>`)
	refSelfRE      = regexp.MustCompile(`(?i)<ref(\s[^>]*)?/>`)
	dropTagBlockRE = regexp.MustCompile(`(?is)<(gallery|math|timeline|imagemap|score)(\s[^>]*)?>.*?</(gallery|math|timeline|imagemap|score)\s*>`)
	tagRE          = regexp.MustCompile(`</?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?>`)
	extLinkLabelRE = regexp.MustCompile(`\[(?:https?:|ftp:)?//[^\s\]]+\s+([^\]]*)\]`)
	extLinkBareRE  = regexp.MustCompile(`\[(?:https?:|ftp:)?//[^\s\]]+\]`)
	magicRE        = regexp.MustCompile(`__[A-Z]+__`)
	headingRE      = regexp.MustCompile(`^=+\s*(.*?)\s*=+$`)
	spacesRE       = regexp.MustCompile(`[ \t]+`)
)

// removeNested deletes every open…close span, counting nesting, so
// {{a|{{b}}}} goes as a whole. An unclosed span runs to the end of s.
func removeNested(s, open, close string) string {
	if !strings.Contains(s, open) {
		return s
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], open):
			depth++
			i += len(open)
		case depth > 0 && strings.HasPrefix(s[i:], close):
			depth--
			i += len(close)
		default:
			if depth == 0 {
				b.WriteByte(s[i])
			}
			i++
		}
	}
	return b.String()
}

// removeTables deletes {| … |} tables, which open and close at the start of
// a line and may nest.
func removeTables(s string) string {
	if !strings.Contains(s, "{|") {
		return s
	}
	var b strings.Builder
	depth := 0
	for _, line := range strings.SplitAfter(s, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "{|"):
			depth++
			continue
		case depth > 0 && strings.HasPrefix(t, "|}"):
			depth--
			continue
		}
		if depth == 0 {
			b.WriteString(line)
		}
	}
	return b.String()
}

// dropNamespaces are link prefixes whose links are not text: media, categories.
var dropNamespaces = map[string]bool{"file": true, "image": true, "media": true, "category": true}

// replaceLinks rewrites [[…]] links (which may nest inside file captions).
func replaceLinks(s string) string {
	if !strings.Contains(s, "[[") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "[[")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end, ok := matchLink(s, i)
		if !ok { // unclosed: drop the brackets, keep the text
			s = s[i+2:]
			continue
		}
		inner := s[i+2 : end]
		s = s[end+2:]
		target, label, piped := strings.Cut(inner, "|")
		if ns, _, ok := strings.Cut(target, ":"); ok {
			ns = strings.ToLower(strings.TrimSpace(ns))
			if dropNamespaces[ns] || isLangCode(ns) {
				continue
			}
		}
		if piped {
			if label == "" { // pipe trick [[Crane (bird)|]]: the title without its qualifier
				label = stripQualifier(target)
			}
			b.WriteString(replaceLinks(label))
		} else {
			b.WriteString(strings.TrimPrefix(target, ":"))
		}
	}
}

// matchLink returns the index of the "]]" closing the "[[" at i.
func matchLink(s string, i int) (int, bool) {
	depth := 0
	for j := i; j+1 < len(s); {
		switch {
		case s[j] == '[' && s[j+1] == '[':
			depth++
			j += 2
		case s[j] == ']' && s[j+1] == ']':
			depth--
			if depth == 0 {
				return j, true
			}
			j += 2
		default:
			j++
		}
	}
	return 0, false
}

func isLangCode(ns string) bool {
	if len(ns) < 2 || len(ns) > 3 {
		return false
	}
	for _, c := range ns {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// stripQualifier drops a trailing " (…)" from a title: "Crane (bird)" → "Crane".
func stripQualifier(title string) string {
	if i := strings.LastIndex(title, " ("); i > 0 && strings.HasSuffix(title, ")") {
		return title[:i]
	}
	return title
}

// WikiLinks returns the article-namespace targets of the [[…]] links in
// wikitext, in order of appearance, without duplicates or #fragments.
func WikiLinks(wikitext string) []string {
	var out []string
	seen := map[string]bool{}
	s := wikitext
	for {
		i := strings.Index(s, "[[")
		if i < 0 {
			return out
		}
		end, ok := matchLink(s, i)
		if !ok {
			return out
		}
		inner := s[i+2 : end]
		s = s[i+2:]
		target, _, _ := strings.Cut(inner, "|")
		target, _, _ = strings.Cut(target, "#")
		if strings.Contains(target, ":") || strings.Contains(target, "[[") {
			continue
		}
		t := NormalizeTitle(target)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
}

var redirectRE = regexp.MustCompile(`(?i)^\s*#redirect\s*:?\s*\[\[([^\]|#]+)`)

// RedirectTarget returns the target of a "#REDIRECT [[Target]]" page.
func RedirectTarget(wikitext string) (string, bool) {
	m := redirectRE.FindStringSubmatch(wikitext)
	if m == nil {
		return "", false
	}
	return NormalizeTitle(m[1]), true
}

var disambigRE = regexp.MustCompile(`(?i)\{\{\s*(disambiguation|disambig|dab|disamb|hndis|geodis|set index article|surname|given name)\s*[|}]`)

// IsDisambiguationWikitext reports whether wikitext carries a disambiguation
// template ({{disambiguation}}, {{disambig}}, {{dab}}, {{hndis}}, …), which is
// what sets the disambiguation page property on Wikipedia.
func IsDisambiguationWikitext(wikitext string) bool { return disambigRE.MatchString(wikitext) }

// LeadSection is the wikitext before the first heading.
func LeadSection(wikitext string) string {
	for i := 0; i < len(wikitext); {
		j := strings.IndexByte(wikitext[i:], '\n')
		line := wikitext[i:]
		if j >= 0 {
			line = wikitext[i : i+j]
		}
		if strings.HasPrefix(line, "==") {
			return wikitext[:i]
		}
		if j < 0 {
			break
		}
		i += j + 1
	}
	return wikitext
}

// NormalizeTitle puts a title in Wikipedia's canonical form: underscores
// become spaces, runs of spaces collapse, the first letter is upper case.
func NormalizeTitle(t string) string {
	t = strings.Join(strings.Fields(strings.ReplaceAll(t, "_", " ")), " ")
	if t == "" {
		return t
	}
	r, n := utf8.DecodeRuneInString(t)
	return string(unicode.ToUpper(r)) + t[n:]
}
