package transform

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// corpusWords feeds identifiers, strings and comments. A real library mixes a
// domain vocabulary with keywords; uniform random text or one repeated block
// would make compression ratios and speeds meaningless.
var corpusWords = strings.Fields(`
	node element value index count item list map key options config handler
	event listener target source result error message buffer stream chunk
	offset length width height size position range start end first last next
	previous parent child children root tree path name type kind state status
	cache store entry record field column row table query filter sort order
	format parse render update create remove insert append prepend replace
	resolve reject promise callback timer delay timeout retry attempt limit
	style class attribute property selector layout scroll frame animation
	transition duration easing opacity transform origin matrix vector point
	request response header body method url params token session user group
	locale language translate plural number date time zone offset calendar
	module plugin hook middleware context scope binding registry factory
	observer subject subscribe dispatch action reducer selector effect signal
	input output transform validate normalize serialize encode decode escape
	`)

var corpusSentences = []string{
	"Returns the %s of the given %s, or undefined when it is missing.",
	"Normalizes %s so that later %s lookups are cheap.",
	"Called whenever the %s changes; re-renders dependent %s nodes.",
	"Throws if %s is not a valid %s.",
	"Caches the computed %s per %s to avoid repeated layout work.",
	"Internal helper: merges %s into %s without mutating either.",
}

// corpusGen writes deterministic pseudo-random JavaScript.
type corpusGen struct {
	rng      *rand.Rand
	out      bytes.Buffer
	depth    int
	declared map[string]bool // top-level names: redeclaring a const or class is an error
}

// generateJSCorpus returns about size bytes of varied, syntactically valid
// JavaScript (functions, classes, objects, strings, regexes, comments), the
// same for the same seed on every run and Go version (PCG is specified).
func generateJSCorpus(size int, seed uint64) []byte {
	g := &corpusGen{rng: rand.New(rand.NewPCG(seed, 0x5eed)), declared: map[string]bool{}}
	g.out.WriteString("/*! corpus-lib v3.2.1 | MIT License | github.com/example/corpus-lib */\n")
	g.out.WriteString("(function (global, factory) {\n  typeof exports === 'object' && typeof module !== 'undefined' ? module.exports = factory() :\n  typeof define === 'function' && define.amd ? define(factory) : (global.CorpusLib = factory());\n}(this, function () {\n  'use strict';\n\n")
	for g.out.Len() < size-200 {
		switch g.rng.IntN(6) {
		case 0, 1:
			g.function()
		case 2:
			g.class()
		case 3:
			g.constObject()
		case 4:
			g.arrowHelper()
		case 5:
			g.table()
		}
		g.out.WriteString("\n")
	}
	g.out.WriteString("  return { version: '3.2.1' };\n}));\n")
	return g.out.Bytes()
}

func (g *corpusGen) word() string { return corpusWords[g.rng.IntN(len(corpusWords))] }

func (g *corpusGen) ident() string {
	n := 1 + g.rng.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		w := g.word()
		if i > 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		parts[i] = w
	}
	return strings.Join(parts, "")
}

func (g *corpusGen) typeName() string {
	w := g.ident()
	return strings.ToUpper(w[:1]) + w[1:]
}

// topLevel returns name, suffixed if needed so that it is declared only once.
func (g *corpusGen) topLevel(name string) string {
	unique := name
	for n := 2; g.declared[unique]; n++ {
		unique = fmt.Sprint(name, n)
	}
	g.declared[unique] = true
	return unique
}

func (g *corpusGen) indent() string { return strings.Repeat("  ", g.depth+1) }

func (g *corpusGen) line(format string, args ...any) {
	g.out.WriteString(g.indent())
	fmt.Fprintf(&g.out, format, args...)
	g.out.WriteString("\n")
}

func (g *corpusGen) sentence() string {
	return fmt.Sprintf(corpusSentences[g.rng.IntN(len(corpusSentences))], g.word(), g.word())
}

func (g *corpusGen) literal() string {
	switch g.rng.IntN(7) {
	case 0:
		return fmt.Sprintf("%d", g.rng.IntN(100000))
	case 1:
		return fmt.Sprintf("%.3f", g.rng.Float64()*100)
	case 2:
		return fmt.Sprintf("'%s %s'", g.word(), g.word())
	case 3:
		return fmt.Sprintf("\"%s\"", g.sentence())
	case 4:
		return []string{"true", "false", "null", "undefined", "[]", "{}"}[g.rng.IntN(6)]
	case 5:
		return fmt.Sprintf("0x%x", g.rng.Uint32()&0xffffff)
	default:
		return fmt.Sprintf("[%d, %d, '%s']", g.rng.IntN(64), g.rng.IntN(4096), g.word())
	}
}

func (g *corpusGen) expr(vars []string) string {
	v := vars[g.rng.IntN(len(vars))]
	switch g.rng.IntN(9) {
	case 0:
		return fmt.Sprintf("%s.%s(%s, %s)", v, g.ident(), g.literal(), vars[g.rng.IntN(len(vars))])
	case 1:
		return fmt.Sprintf("(%s?.%s ?? %s)", v, g.ident(), g.literal())
	case 2:
		return fmt.Sprintf("`%s ${%s.%s} of ${%s}`", g.word(), v, g.word(), vars[g.rng.IntN(len(vars))])
	case 3:
		return fmt.Sprintf("%s[%s] || %s", v, g.literal(), g.literal())
	case 4:
		return fmt.Sprintf("Math.max(%s.length, %d) * %s", v, g.rng.IntN(50), vars[g.rng.IntN(len(vars))])
	case 5:
		return fmt.Sprintf("/^%s[-_]?(\\d+)$/i.test(%s)", g.word(), v)
	case 6:
		return fmt.Sprintf("typeof %s === '%s' ? %s : %s", v, []string{"string", "number", "function", "object"}[g.rng.IntN(4)], g.literal(), v)
	case 7:
		return fmt.Sprintf("%s.map((%s) => %s.%s + %d)", v, "x", "x", g.word(), g.rng.IntN(10))
	default:
		return fmt.Sprintf("new %s(%s, { %s: %s })", g.typeName(), v, g.word(), g.literal())
	}
}

func (g *corpusGen) statements(vars []string, n int) {
	for i := 0; i < n; i++ {
		switch g.rng.IntN(8) {
		case 0, 1:
			name := g.ident() + fmt.Sprint(g.rng.IntN(9))
			g.line("var %s = %s;", name, g.expr(vars))
			vars = append(vars, name)
		case 2:
			if g.depth < 3 {
				g.line("if (%s) {", g.expr(vars))
				g.depth++
				g.statements(vars, 1+g.rng.IntN(3))
				g.depth--
				g.line("} else {")
				g.depth++
				g.line("%s.%s = %s;", vars[g.rng.IntN(len(vars))], g.ident(), g.literal())
				g.depth--
				g.line("}")
			}
		case 3:
			if g.depth < 3 {
				g.line("for (var i = 0; i < %s.length; i++) {", vars[g.rng.IntN(len(vars))])
				g.depth++
				g.statements(append(vars, "i"), 1+g.rng.IntN(2))
				g.depth--
				g.line("}")
			}
		case 4:
			g.line("// %s", g.sentence())
		case 5:
			g.line("%s.%s(%s);", vars[g.rng.IntN(len(vars))], g.ident(), g.expr(vars))
		case 6:
			if g.depth < 3 {
				g.line("switch (%s.%s) {", vars[g.rng.IntN(len(vars))], g.word())
				for c := 0; c < 2+g.rng.IntN(3); c++ {
					g.line("  case '%s':", g.word())
					g.line("    return %s;", g.expr(vars))
				}
				g.line("  default:")
				g.line("    throw new Error('Unknown %s: ' + %s);", g.word(), vars[g.rng.IntN(len(vars))])
				g.line("}")
			}
		default:
			if g.depth < 3 {
				g.line("try {")
				g.depth++
				g.statements(vars, 1)
				g.depth--
				g.line("} catch (err) {")
				g.line("  console.warn('%s failed', err);", g.ident())
				g.line("}")
			}
		}
	}
}

// params returns distinct parameter names (duplicates are an error in strict mode).
func (g *corpusGen) params() []string {
	ps := make([]string, 0, 3)
	for n := 1 + g.rng.IntN(3); len(ps) < n; {
		if p := g.ident(); !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

func (g *corpusGen) docComment(ps []string) {
	g.line("/**")
	g.line(" * %s", g.sentence())
	for _, p := range ps {
		g.line(" * @param {%s} %s - %s", []string{"Object", "string", "number", "Array<*>", "Function"}[g.rng.IntN(5)], p, g.sentence())
	}
	g.line(" * @returns {%s}", g.typeName())
	g.line(" */")
}

func (g *corpusGen) function() {
	ps := g.params()
	g.docComment(ps)
	async := ""
	if g.rng.IntN(4) == 0 {
		async = "async "
	}
	g.line("%sfunction %s(%s) {", async, g.topLevel(g.ident()), strings.Join(ps, ", "))
	g.depth++
	if async != "" {
		g.line("const %s = await %s;", "loaded", g.expr(ps))
		ps = append(ps, "loaded")
	}
	g.statements(ps, 3+g.rng.IntN(6))
	g.line("return %s;", g.expr(ps))
	g.depth--
	g.line("}")
}

func (g *corpusGen) class() {
	name := g.topLevel(g.typeName())
	private := g.word()
	g.line("class %s {", name)
	g.depth++
	g.line("#%s = %s;", private, g.literal())
	g.line("static %s = %s;", strings.ToUpper(g.word()), g.literal())
	ps := g.params()
	g.line("constructor(%s) {", strings.Join(ps, ", "))
	for _, p := range ps {
		g.line("  this.%s = %s;", p, p)
	}
	g.line("}")
	for m := 0; m < 2+g.rng.IntN(4); m++ {
		mps := g.params()
		g.line("%s(%s) {", g.ident(), strings.Join(mps, ", "))
		g.depth++
		g.statements(append(mps, "this"), 2+g.rng.IntN(4))
		g.line("return this.#%s ?? (%s);", private, g.expr(mps))
		g.depth--
		g.line("}")
	}
	g.line("get %s() { return this.#%s; }", g.word(), private)
	g.depth--
	g.line("}")
}

func (g *corpusGen) constObject() {
	g.line("var %s = {", g.topLevel(strings.ToUpper(g.word())+"_"+strings.ToUpper(g.word())))
	for i := 0; i < 3+g.rng.IntN(10); i++ {
		g.line("  %s: %s,", g.ident(), g.literal())
	}
	g.line("  %s: function (%s) { return %s; }", g.ident(), "value", g.expr([]string{"value", "this"}))
	g.line("};")
}

func (g *corpusGen) arrowHelper() {
	ps := g.params()
	g.line("const %s = (%s) => %s;", g.topLevel(g.ident()), strings.Join(ps, ", "), g.expr(ps))
}

func (g *corpusGen) table() {
	g.line("var %s = {", g.topLevel(g.word()+"Messages"))
	for i := 0; i < 4+g.rng.IntN(8); i++ {
		g.line("  '%s.%s': '%s',", g.word(), g.word(), strings.ReplaceAll(g.sentence(), "'", "\\'"))
	}
	g.line("};")
}
