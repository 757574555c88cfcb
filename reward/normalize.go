package reward

import (
	"regexp"
	"strings"
	"unicode"
)

// maxAnswerChars bounds the length of an answer or reference that is parsed at all.
const maxAnswerChars = 4000

var unicodeReplacer = strings.NewReplacer(
	"−", "-", "–", "-", "—", "-", "×", "*", "·", "*", "⋅", "*", "÷", "/",
	"π", `\pi `, "√", `\sqrt`, "∞", `\infty `, "∪", `\cup `, "≤", "≤", "≥", "≥", "≠", "≠",
	"°", "", "²", "^2", "³", "^3", "½", "(1/2)", "¼", "(1/4)", "¾", "(3/4)", "≈", "=", "\u00a0", " ", "\u2009", " ", "\u202f", " ", "’", "'", "“", `"`, "”", `"`,
)

// commandRewrites maps LaTeX commands to what the parser reads. An empty value deletes the command.
var commandRewrites = map[string]string{
	"left": "", "right": "", "bigl": "", "bigr": "", "Bigl": "", "Bigr": "", "big": "", "Big": "",
	"biggl": "", "biggr": "", "displaystyle": "", "textstyle": "", "scriptstyle": "",
	"quad": " ", "qquad": " ", ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "limits": "",
	"dfrac": `\frac`, "tfrac": `\frac`, "cfrac": `\frac`, "dbinom": `\binom`, "tbinom": `\binom`,
	"cdot": "*", "times": "*", "ast": "*", "div": "/",
	"le": "≤", "leq": "≤", "leqslant": "≤", "ge": "≥", "geq": "≥", "geqslant": "≥",
	"ne": "≠", "neq": "≠", "lt": "<", "gt": ">", "approx": "=", "simeq": "=", "equiv": "=",
	"circ": "", "degree": "", "%": "", "$": "",
	// An ellipsis is kept as a symbol of its own: "1, 2, 3, \dots" says "and so on", so it must
	// not equal the finite list.
	"dots": `\dots `, "ldots": `\dots `, "cdots": `\dots `, "dotsc": `\dots `, "dotsb": `\dots `, "dotso": `\dots `,
	"infinity": `\infty`, "emptyset": `\varnothing`, "varnothing": `\varnothing`,
	"lvert": "|", "rvert": "|", "vert": "|", "mid": "|", "lbrace": `\{`, "rbrace": `\}`,
	"land": " and ", "lor": " or ", "wedge": " and ", "vee": " or ",
}

// wrapperCommands hold text or roman type: their braces are unwrapped, and unit words after a
// quantity are dropped.
var wrapperCommands = map[string]bool{
	"text": true, "textbf": true, "textit": true, "textrm": true, "textnormal": true, "mbox": true,
	"mathrm": true, "mathbf": true, "mathit": true, "mathsf": true, "operatorname": true,
	"boldsymbol": true, "boxed": true, "fbox": true, "bf": true, "rm": true, "hbox": true, "textsf": true, "texttt": true,
}

var unitPowerRE = regexp.MustCompile(`^\s*\^\s*(\{\s*[23]\s*\}|[23])`)

var degreeRE = regexp.MustCompile(`\^\s*\{?\s*\\circ\s*\}?|\\circ`)

var unitWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`cm mm km m meter meters metre metres centimeter centimeters
	millimeter millimeters kilometer kilometers inch inches in ft foot feet yard yards yd mile miles mi
	mph kph kmh s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks
	month months year years yr yrs degree degrees deg radian radians rad dollar dollars cent cents
	unit units sq square cubic g gram grams kg kilogram kilograms mg lb lbs pound pounds oz ounce ounces
	l liter liters litre litres ml milliliter milliliters gallon gallons cup cups people persons students
	ways point points percent percentage pct mps km/h m/s cm^2 cm^3 m^2 m^3 ft^2 ft^3 in^2 in^3 units^2`) {
		unitWords[w] = true
	}
}

// normalize rewrites a LaTeX or plain answer into the small language the parser reads: noise
// commands removed, synonyms unified, units and currency dropped, delimiters trimmed.
func normalize(s string) string {
	s = markEllipses(s) // before stripMath, which would take "..." for trailing periods
	s = stripMath(s)
	s = thousandsBangRE.ReplaceAllString(s, ",$1")
	s = unicodeReplacer.Replace(s)
	s = degreeRE.ReplaceAllString(s, "")
	s = rewriteCommands(s)
	s = latexThousands(s)
	s = strings.TrimSpace(strings.ReplaceAll(s, "%", ""))
	s = strings.ReplaceAll(s, "$", "")
	s = stripUnitWords(s)
	s = strings.TrimSpace(s)
	for strings.HasSuffix(s, ".") || strings.HasSuffix(s, `\\`) || strings.HasSuffix(s, ",") {
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "."), `\\`), ","))
	}
	s = repeatingDecimals(s)
	return joinThousands(s)
}

// ellipsisRE matches a written-out ellipsis: three or more periods, or the unicode one.
var ellipsisRE = regexp.MustCompile(`\.{3,}|…`)

// markEllipses turns "..." into the \dots symbol, so that no later step reads it as periods.
func markEllipses(s string) string {
	if !strings.Contains(s, "..") && !strings.Contains(s, "…") {
		return s
	}
	return ellipsisRE.ReplaceAllString(s, ` \dots `)
}

// latexThousands reads LaTeX's "{,}": between a digit group that does not start with 0 and
// exactly three digits it separates thousands (12{,}000); elsewhere it is a comma (0{,}111 is not
// 111).
func latexThousands(s string) string {
	if !strings.Contains(s, "{,}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !strings.HasPrefix(s[i:], "{,}") {
			b.WriteByte(s[i])
			i++
			continue
		}
		start := i // the digit group before, earlier groups included
		for start > 0 && (s[start-1] >= '0' && s[start-1] <= '9' || start >= 3 && s[start-3:start] == "{,}") {
			if s[start-1] == '}' {
				start -= 3
			} else {
				start--
			}
		}
		after := s[i+3:]
		group := len(after) >= 3 && isDigits(after[:3]) && (len(after) == 3 || after[3] < '0' || after[3] > '9')
		if !group || start == i || s[start] == '0' {
			b.WriteByte(',')
		}
		i += 3
	}
	return b.String()
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// thousandsBangRE matches a comma followed by a negative thin space, "11,\! 111": a thousands
// separator in LaTeX, whatever spacing follows it.
var thousandsBangRE = regexp.MustCompile(`,\s*\\!\s*(\d)`)

// rewriteCommands walks the string once, replacing commands by their rewrites and unwrapping
// \text{…}-like groups.
func rewriteCommands(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		if j == i+1 { // one-character command: \, \! \% \$ \{ \\ …
			j = i + 2
		}
		name := s[i+1 : j]
		if rep, ok := commandRewrites[name]; ok {
			b.WriteString(rep)
			if (name == "left" || name == "right" || strings.HasPrefix(name, "big") || strings.HasPrefix(name, "Big")) && j < len(s) && s[j] == '.' {
				j++ // \left. is an invisible delimiter
			}
			i = j
			continue
		}
		if wrapperCommands[name] {
			k := j
			for k < len(s) && s[k] == ' ' {
				k++
			}
			if k < len(s) && s[k] == '{' {
				if end := matchBrace(s, k); end > 0 {
					content := s[k+1 : end]
					rep := unwrapText(b.String(), content, s[end+1:])
					b.WriteString(rep)
					i = end + 1
					if rep == " " { // a dropped unit takes its power along: \text{cm}^2
						i += len(unitPowerRE.FindString(s[i:]))
					}
					continue
				}
			}
			i = j
			continue
		}
		b.WriteString(s[i:j])
		i = j
	}
	return b.String()
}

// unwrapText decides what a \text{content} group becomes given the text before and after it.
func unwrapText(before, content, after string) string {
	c := strings.TrimSpace(content)
	lc := strings.ToLower(c)
	switch lc {
	case "or", "and", ",", "or,", "and,":
		return " or "
	case "":
		return ""
	}
	if strings.TrimSpace(before) != "" && isUnitLike(c) && c != "i" && c != "e" {
		return " "
	}
	inner := rewriteCommands(content)
	if strings.TrimSpace(before) == "" && strings.TrimSpace(after) == "" {
		return inner
	}
	return " " + inner + " "
}

// isUnitLike reports whether s looks like a unit: letters (with spaces, powers and slashes), none
// of which read as math.
func isUnitLike(s string) bool {
	hasLetter := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			hasLetter = true
		case r == ' ' || r == '^' || r == '/' || r == '.' || r == '{' || r == '}' || unicode.IsDigit(r):
		default:
			return false
		}
	}
	if !hasLetter {
		return false
	}
	for _, w := range strings.Fields(strings.ToLower(s)) {
		if !unitWords[strings.Trim(w, ".{}")] && !unitWords[strings.Trim(w, "{}.")+"s"] {
			// An unknown word after a quantity ("5 apples") is still a unit unless it is one letter
			// that may be a variable (5m is 5·m unless written as \text{m}).
			if len(w) == 1 {
				return false
			}
		}
	}
	return true
}

var trailingUnitRE = regexp.MustCompile(`^(.*[0-9}\)])\s*([A-Za-z][A-Za-z/]*(?:\^\{?[23]\}?)?)\s*$`)

// stripUnitWords drops known unit words after a quantity ("5 cm", "12 square feet").
func stripUnitWords(s string) string {
	for k := 0; k < 4; k++ {
		m := trailingUnitRE.FindStringSubmatch(s)
		if m == nil || !unitWords[strings.ToLower(m[2])] || len(m[2]) < 2 {
			return s
		}
		s = strings.TrimSpace(m[1])
	}
	return s
}

var thousandsRE = regexp.MustCompile(`^[+-]?[1-9]\d{0,2}(?:(,|\s)\d{3})+(?:\.\d+)?$`)

// joinThousands turns "1,000,000" and "1 000" into one number. A comma list like "1,2" is left
// alone: it is a list. So is "0,111": no thousands group starts with a lone zero, and whether it
// is a decimal comma or the list 0, 111 cannot be told, so it is never the integer 111.
func joinThousands(s string) string {
	m := thousandsRE.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	r := strings.NewReplacer(",", "", " ", "", "\t", "")
	return r.Replace(s)
}

// matchBrace returns the index of the brace closing the one at s[open], or -1.
func matchBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
