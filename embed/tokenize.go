package embed

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize splits text into lower-cased word tokens. The rules, which
// docs/embed.md repeats for users, are:
//
//   - A token is a maximal run of letters (Unicode L*), digits (N*) and
//     combining marks (M*, so "café" written with a combining accent stays
//     one token). Everything else separates tokens: spaces, punctuation,
//     symbols, and also '_' and '-', so WordNet lemmas such as
//     "great_white_shark" and compounds such as "x-ray" split into their
//     words, which then share vectors with the same words elsewhere.
//   - An apostrophe (' or ’) between two letters or digits stays inside
//     the token and is normalised to ASCII "'": "o’brien" → "o'brien".
//   - Tokens are lower-cased rune by rune with Unicode simple case mapping (unicode.ToLower);
//     no other normalisation (accent stripping, NFC, stemming) is done.
//   - No token is dropped for its length; rare tokens are dropped later by
//     the vocabulary's min_count.
func Tokenize(text string) []string {
	return AppendTokens(nil, text)
}

// AppendTokens appends the tokens of text (see Tokenize) to dst.
func AppendTokens(dst []string, text string) []string {
	start := -1 // byte offset of the current token, -1 when outside one
	var b strings.Builder
	flush := func() {
		if start >= 0 {
			dst = append(dst, b.String())
			b.Reset()
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case isWordRune(r):
			if start < 0 {
				start = i
			}
			if 'A' <= r && r <= 'Z' {
				b.WriteByte(byte(r) + 'a' - 'A')
			} else if r < utf8.RuneSelf {
				b.WriteByte(byte(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
		case (r == '\'' || r == '’') && start >= 0:
			// Keep only when a word character follows.
			next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):])
			if isWordRune(next) {
				b.WriteByte('\'')
			} else {
				flush()
			}
		default:
			flush()
		}
	}
	flush()
	return dst
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}
