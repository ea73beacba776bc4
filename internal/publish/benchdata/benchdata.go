// Package benchdata generates realistic release contents for benchmarks:
// JavaScript and CSS that minify and compress like real library code (varied
// identifiers, comments, literals), in the size mix of a real package — most
// files a few KiB, a few large bundles — and deterministic for a seed.
package benchdata

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

var words = strings.Fields(`element node value options config handler callback event listener target
source result index length offset width height position state store action reducer render component
props context request response buffer stream chunk token parser scanner lexer module export import
cache entry record field column row table query filter map reduce sort compare merge extend assign
clone parse format validate normalize resolve reject promise timeout interval frame animation style
class attribute selector document window navigator location history storage session cookie header
body footer layout grid flex align justify margin padding border radius shadow color background font
size weight line height transform transition opacity visible hidden active disabled selected focus`)

var cssProps = strings.Fields(`color background-color margin padding border border-radius display position
top left right bottom width height max-width min-height font-size font-weight line-height text-align
opacity transform transition box-shadow z-index overflow cursor flex-direction justify-content align-items gap`)

type gen struct {
	r *rand.Rand
	b strings.Builder
}

func (g *gen) word() string { return words[g.r.IntN(len(words))] }

func (g *gen) ident() string {
	w := g.word()
	if g.r.IntN(2) == 0 {
		n := g.word()
		w += strings.ToUpper(n[:1]) + n[1:]
	}
	return w
}

func (g *gen) literal() string {
	switch g.r.IntN(6) {
	case 0:
		return fmt.Sprintf("%d", g.r.IntN(10000))
	case 1:
		return fmt.Sprintf("%q", g.word()+" "+g.word()+" "+g.word())
	case 2:
		return "null"
	case 3:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 4:
		return fmt.Sprintf("'%s-%s'", g.word(), g.word())
	default:
		return fmt.Sprintf("%.3f", g.r.Float64()*100)
	}
}

func (g *gen) expr(vars []string) string {
	v := vars[g.r.IntN(len(vars))]
	switch g.r.IntN(7) {
	case 0:
		return v + "." + g.ident()
	case 1:
		return g.ident() + "(" + v + ", " + g.literal() + ")"
	case 2:
		return v + " + " + g.literal()
	case 3:
		return v + " && " + v + "." + g.ident() + "()"
	case 4:
		return "{ " + g.ident() + ": " + v + ", " + g.ident() + ": " + g.literal() + " }"
	case 5:
		return "[" + v + ", " + g.literal() + ", " + g.literal() + "]"
	default:
		return g.literal()
	}
}

func (g *gen) function(indent string) {
	name := g.ident()
	params := []string{g.ident(), g.ident()}[:1+g.r.IntN(2)]
	verb := g.word() // drawn first: the order of draws fixes a seed's output
	fmt.Fprintf(&g.b, "%s/**\n%s * %s the %s of the %s.\n", indent, indent, strings.ToUpper(verb[:1])+verb[1:], g.word(), g.word())
	for _, p := range params {
		fmt.Fprintf(&g.b, "%s * @param {Object} %s the %s %s\n", indent, p, g.word(), g.word())
	}
	fmt.Fprintf(&g.b, "%s */\n%sfunction %s(%s) {\n", indent, indent, name, strings.Join(params, ", "))
	vars := append([]string(nil), params...)
	for i, n := 0, 2+g.r.IntN(8); i < n; i++ {
		switch g.r.IntN(5) {
		case 0:
			v := g.ident()
			fmt.Fprintf(&g.b, "%s  var %s = %s;\n", indent, v, g.expr(vars))
			vars = append(vars, v)
		case 1:
			fmt.Fprintf(&g.b, "%s  if (%s) {\n%s    %s = %s;\n%s  }\n", indent, g.expr(vars), indent, vars[g.r.IntN(len(vars))], g.expr(vars), indent)
		case 2:
			fmt.Fprintf(&g.b, "%s  for (var i = 0; i < %s.length; i++) {\n%s    %s(%s[i]);\n%s  }\n", indent, vars[0], indent, g.ident(), vars[0], indent)
		case 3:
			fmt.Fprintf(&g.b, "%s  // %s %s %s\n", indent, g.word(), g.word(), g.word())
		default:
			fmt.Fprintf(&g.b, "%s  %s.%s = %s;\n", indent, vars[g.r.IntN(len(vars))], g.ident(), g.expr(vars))
		}
	}
	fmt.Fprintf(&g.b, "%s  return %s;\n%s}\n\n", indent, g.expr(vars), indent)
}

// JS returns about size bytes of library-like JavaScript.
func JS(seed uint64, size int) []byte {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x5eed))}
	fmt.Fprintf(&g.b, "/*! %s v%d.%d.%d | MIT License */\n(function (global, factory) {\n  'use strict';\n", g.word(), g.r.IntN(5), g.r.IntN(20), g.r.IntN(20))
	for g.b.Len() < size {
		g.function("  ")
	}
	g.b.WriteString("})(this);\n")
	return []byte(g.b.String())
}

// CSS returns about size bytes of stylesheet.
func CSS(seed uint64, size int) []byte {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0xc55))}
	fmt.Fprintf(&g.b, "/*! %s styles | MIT */\n", g.word())
	for g.b.Len() < size {
		fmt.Fprintf(&g.b, ".%s-%s, .%s > .%s:hover {\n", g.word(), g.word(), g.word(), g.word())
		for i, n := 0, 2+g.r.IntN(6); i < n; i++ {
			p := cssProps[g.r.IntN(len(cssProps))]
			fmt.Fprintf(&g.b, "  %s: %dpx;\n", p, g.r.IntN(64))
		}
		g.b.WriteString("}\n\n")
	}
	return []byte(g.b.String())
}

// Package returns a release's files: n files of about total bytes, most a few
// KiB, a few large (up to 500 KiB), 80% JavaScript, 20% CSS.
func Package(seed uint64, n int, total int) map[string][]byte {
	sizes := Sizes(seed, n, total)
	files := make(map[string][]byte, n)
	for i, s := range sizes {
		dir := words[i%17]
		if i%5 == 4 {
			files[fmt.Sprintf("css/%s/%s-%04d.css", dir, words[i%31], i)] = CSS(seed*1_000_003+uint64(i), s)
		} else {
			files[fmt.Sprintf("js/%s/%s-%04d.js", dir, words[i%29], i)] = JS(seed*1_000_003+uint64(i), s)
		}
	}
	return files
}

// Sizes returns the sizes of a release's n files, about total bytes in all,
// in the mix Package uses: 2% bundles of 150–500 KiB, 10% modules of 16–64
// KiB, the rest 1–8 KiB (before scaling to total), largest first. A
// benchmark that names its own files (after a catalog entry's fileMap)
// takes their sizes from here.
func Sizes(seed uint64, n int, total int) []int {
	r := rand.New(rand.NewPCG(seed, 1))
	sizes := make([]int, n)
	large := max(1, n/50)  // 2%: 150–500 KiB bundles
	medium := max(1, n/10) // 10%: 16–64 KiB modules
	sum := 0
	for i := range sizes {
		switch {
		case i < large:
			sizes[i] = 150<<10 + r.IntN(350<<10)
		case i < large+medium:
			sizes[i] = 16<<10 + r.IntN(48<<10)
		default:
			sizes[i] = 1<<10 + r.IntN(7<<10)
		}
		sum += sizes[i]
	}
	for i := range sizes {
		sizes[i] = sizes[i] * total / sum
	}
	return sizes
}

// NextVersion returns a copy of files with fraction of them changed.
func NextVersion(files map[string][]byte, fraction float64, seed uint64) map[string][]byte {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	r := rand.New(rand.NewPCG(seed, 2))
	next := make(map[string][]byte, len(files))
	for _, p := range paths {
		next[p] = files[p]
	}
	changed := int(float64(len(paths)) * fraction)
	for _, i := range r.Perm(len(paths))[:changed] {
		p := paths[i]
		next[p] = append([]byte(fmt.Sprintf("/* patched in the next release: %d */\n", seed)), files[p]...)
	}
	return next
}

// Total is the byte count of files.
func Total(files map[string][]byte) int {
	n := 0
	for _, f := range files {
		n += len(f)
	}
	return n
}
