package wiki

import (
	"bytes"
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

// maxLinkDepth bounds how deep [[…]] links nest (a file caption holding a
// link is 2); brackets nested deeper are dropped, their text kept. It keeps
// replaceLinks linear: each level copies its text once into the next.
const maxLinkDepth = 16

// replaceLinks rewrites [[…]] links (which may nest inside file captions)
// in one pass over s: [[target|label]] becomes label, [[target]] target,
// file, category and interlanguage links go with their captions, and an
// unclosed [[ loses its brackets and keeps its text.
func replaceLinks(s string) string {
	if !strings.Contains(s, "[[") {
		return s
	}
	type frame struct {
		open   int    // index of the frame's "[[" in s
		pipeAt int    // index in s of its first own '|', -1 before one
		pipe   int    // len(buf) at that '|'
		buf    []byte // the rendered text inside the frame
	}
	stack := []*frame{{open: -2, pipeAt: -1, buf: make([]byte, 0, len(s))}} // stack[0]: the page
	excess := 0                                                             // "[[" nested beyond maxLinkDepth
	for i := 0; i < len(s); {
		top := stack[len(stack)-1]
		switch {
		case strings.HasPrefix(s[i:], "[["):
			if len(stack) > maxLinkDepth {
				excess++
			} else {
				stack = append(stack, &frame{open: i, pipeAt: -1})
			}
			i += 2
		case strings.HasPrefix(s[i:], "]]") && (excess > 0 || len(stack) > 1):
			i += 2
			if excess > 0 {
				excess--
				continue
			}
			stack = stack[:len(stack)-1]
			parent := stack[len(stack)-1]
			parent.buf = renderLink(s, top.open, i-2, top.pipeAt, top.buf, top.pipe, parent.buf)
		case s[i] == '|' && len(stack) > 1 && excess == 0 && top.pipeAt < 0:
			top.pipeAt, top.pipe = i, len(top.buf)
			top.buf = append(top.buf, '|')
			i++
		default:
			// Copy up to the next character that can matter.
			j := strings.IndexAny(s[i+1:], "[]|")
			if j < 0 {
				j = len(s) - i - 1
			}
			top.buf = append(top.buf, s[i:i+1+j]...)
			i += 1 + j
		}
	}
	for len(stack) > 1 { // unclosed: drop the brackets, keep the text
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		parent := stack[len(stack)-1]
		parent.buf = append(parent.buf, top.buf...)
	}
	return string(stack[0].buf)
}

// renderLink appends what the link s[open:close+2] shows to dst: its
// rendered label after the first '|' (pipeAt in s, pipe in buf), else its
// rendered target; nothing for media, category and interlanguage links.
func renderLink(s string, open, close, pipeAt int, buf []byte, pipe int, dst []byte) []byte {
	end := close
	if pipeAt >= 0 {
		end = pipeAt
	}
	target := s[open+2 : end]
	if ns, _, ok := strings.Cut(target, ":"); ok {
		ns = strings.ToLower(strings.TrimSpace(ns))
		if dropNamespaces[ns] || isLangCode(ns) {
			return dst
		}
	}
	if pipeAt < 0 {
		return append(dst, bytes.TrimPrefix(buf, []byte(":"))...)
	}
	if label := buf[pipe+1:]; len(label) > 0 {
		return append(dst, label...)
	}
	// The pipe trick, [[Crane (bird)|]]: the title without its qualifier.
	return append(dst, stripQualifier(target)...)
}

// linkPairs returns the positions of the "[[" in s, in order, and the
// position of the "]]" closing each (-1 when unclosed), in one pass.
func linkPairs(s string) (opens, closes []int) {
	var stack []int
	for i := 0; i+1 < len(s); {
		switch {
		case s[i] == '[' && s[i+1] == '[':
			stack = append(stack, len(opens))
			opens = append(opens, i)
			closes = append(closes, -1)
			i += 2
		case s[i] == ']' && s[i+1] == ']':
			if len(stack) > 0 {
				closes[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
			}
			i += 2
		default:
			i++
		}
	}
	return opens, closes
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
// wikitext, in order of appearance, without duplicates or #fragments. It
// stops at the first unclosed link. Linear in the text: brackets are
// paired in one pass, and each link's target is read only up to its first
// '|' or nested "[[".
func WikiLinks(wikitext string) []string {
	var out []string
	seen := map[string]bool{}
	s := wikitext
	opens, closes := linkPairs(s)
	for k, o := range opens {
		c := closes[k]
		if c < 0 {
			return out
		}
		end := c
		nested := false
		for j := o + 2; j < c; j++ {
			if s[j] == '|' {
				end = j
				break
			}
			if s[j] == '[' && s[j+1] == '[' {
				nested = true
				break
			}
		}
		if nested {
			continue
		}
		target, _, _ := strings.Cut(s[o+2:end], "#")
		if strings.Contains(target, ":") {
			continue
		}
		t := NormalizeTitle(target)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
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
