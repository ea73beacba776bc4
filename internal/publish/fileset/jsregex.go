package fileset

import (
	"context"
	"errors"
	"fmt"
	"unicode"
)

// A small engine for the JavaScript regular expressions minimatch builds:
// literals, ".", classes, groups, alternation, the quantifiers ? * + (lazy
// or not), ^ $ \b \B and lookaheads. Go's regexp has no lookahead, and a
// backtracking engine can take exponential time, so the expression is
// compiled to a Thompson NFA and simulated position by position; a
// lookahead is a sub-match memoised per (lookahead, position). Captures and
// backreferences, which minimatch never writes, are not supported, so the
// answer (match or not) does not depend on the order of alternatives.
//
// Every step is charged to a Budget, so one pattern's cost is bounded and
// cancellable whatever the pattern and the name.

// Budget bounds the work of matching and carries the context that can
// cancel it. One budget is shared by all the names a pattern is matched
// against, so the bound is per pattern.
type Budget struct {
	ctx   context.Context
	left  int64
	limit int64
	tick  int
}

// ErrTooExpensive is wrapped by the error of a match that ran out of budget.
var ErrTooExpensive = errors.New("glob is too expensive to match")

// NewBudget allows steps units of matching work (one NFA state visited is
// one unit) under ctx.
func NewBudget(ctx context.Context, steps int64) *Budget {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Budget{ctx: ctx, left: steps, limit: steps}
}

func (b *Budget) spend(n int) error {
	b.left -= int64(n)
	if b.left < 0 {
		return fmt.Errorf("%w: more than %d steps", ErrTooExpensive, b.limit)
	}
	if b.tick += n; b.tick >= 4096 {
		b.tick = 0
		if err := b.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

type rxOp uint8

const (
	rxRune  rxOp = iota // consume r
	rxAny               // consume any but a line terminator (".")
	rxClass             // consume a member of class
	rxSplit             // continue at next and alt
	rxJump              // continue at next
	rxBegin             // assert the start of the input
	rxEnd               // assert the end of the input
	rxWordB             // assert a word boundary (\b), or not (\B) when neg
	rxLook              // assert that the body at alt matches here (or not, when neg)
	rxMatch             // accept
)

type rxInst struct {
	op    rxOp
	r     rune
	class *jsClass
	neg   bool
	next  int
	alt   int
}

type rxProg struct {
	insts []rxInst
	never bool // the expression is invalid JavaScript: minimatch then matches nothing
}

// maxProgramSize bounds the compiled expression; minimatch's rewriting of
// "!(…)" copies the rest of the segment once per negation, so a pattern
// with many of them grows exponentially.
const maxProgramSize = 20000

// errProgramSize is returned by compileJSRegex for an expression over
// maxProgramSize instructions.
var errProgramSize = fmt.Errorf("the pattern is too complex (its expression exceeds %d states)", maxProgramSize)

// compileJSRegex compiles a JavaScript expression. An expression that
// JavaScript would refuse compiles to a program that matches nothing, as
// minimatch falls back to /$./ then.
func compileJSRegex(src string) (*rxProg, error) {
	p := &rxParser{s: []rune(src)}
	node, err := p.alternation()
	if err == nil && p.i < len(p.s) {
		err = errors.New("unbalanced ')'")
	}
	if err != nil {
		return &rxProg{never: true}, nil
	}
	c := &rxCompiler{}
	c.node(node)
	c.emit(rxInst{op: rxMatch})
	for len(c.bodies) > 0 {
		b := c.bodies[0]
		c.bodies = c.bodies[1:]
		c.insts[b.look].alt = len(c.insts)
		c.node(b.node)
		c.emit(rxInst{op: rxMatch})
		if len(c.insts) > maxProgramSize {
			return nil, errProgramSize
		}
	}
	if len(c.insts) > maxProgramSize {
		return nil, errProgramSize
	}
	return &rxProg{insts: c.insts}, nil
}

type rxKind uint8

const (
	rxnEmpty rxKind = iota
	rxnRune
	rxnAny
	rxnClass
	rxnConcat
	rxnAlt
	rxnRepeat // min 0 or 1, max 1 or unbounded (-1)
	rxnBegin
	rxnEnd
	rxnWordB
	rxnLook
)

type rxNode struct {
	kind     rxKind
	r        rune
	class    *jsClass
	subs     []*rxNode
	min, max int
	neg      bool
}

type rxParser struct {
	s []rune
	i int
}

func (p *rxParser) alternation() (*rxNode, error) {
	var alts []*rxNode
	for {
		n, err := p.concat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if p.i < len(p.s) && p.s[p.i] == '|' {
			p.i++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &rxNode{kind: rxnAlt, subs: alts}, nil
}

func (p *rxParser) concat() (*rxNode, error) {
	var items []*rxNode
	for p.i < len(p.s) && p.s[p.i] != '|' && p.s[p.i] != ')' {
		atom, err := p.atom()
		if err != nil {
			return nil, err
		}
		if p.i < len(p.s) {
			min, max := -1, 0
			switch p.s[p.i] {
			case '*':
				min, max = 0, -1
			case '+':
				min, max = 1, -1
			case '?':
				min, max = 0, 1
			}
			if min >= 0 {
				p.i++
				if p.i < len(p.s) && p.s[p.i] == '?' {
					p.i++ // lazy: the same set of matches
				}
				atom = &rxNode{kind: rxnRepeat, subs: []*rxNode{atom}, min: min, max: max}
			}
		}
		items = append(items, atom)
	}
	switch len(items) {
	case 0:
		return &rxNode{kind: rxnEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &rxNode{kind: rxnConcat, subs: items}, nil
}

func (p *rxParser) atom() (*rxNode, error) {
	c := p.s[p.i]
	p.i++
	switch c {
	case '(':
		kind, neg := rxnConcat, false
		if p.i+1 < len(p.s) && p.s[p.i] == '?' {
			switch p.s[p.i+1] {
			case ':':
			case '=':
				kind = rxnLook
			case '!':
				kind, neg = rxnLook, true
			default:
				return nil, errors.New("unsupported group")
			}
			p.i += 2
		}
		inner, err := p.alternation()
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, errors.New("unterminated group")
		}
		p.i++
		if kind == rxnLook {
			return &rxNode{kind: rxnLook, subs: []*rxNode{inner}, neg: neg}, nil
		}
		return inner, nil
	case '[':
		class, end, ok := parseJSClass(p.s, p.i)
		if !ok {
			return nil, errors.New("unterminated class")
		}
		p.i = end
		return &rxNode{kind: rxnClass, class: class}, nil
	case '.':
		return &rxNode{kind: rxnAny}, nil
	case '^':
		return &rxNode{kind: rxnBegin}, nil
	case '$':
		return &rxNode{kind: rxnEnd}, nil
	case '*', '+', '?':
		return nil, errors.New("nothing to repeat")
	case '\\':
		if p.i >= len(p.s) {
			return nil, errors.New("trailing backslash")
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case 'b', 'B':
			return &rxNode{kind: rxnWordB, neg: e == 'B'}, nil
		case 'd', 'D', 'w', 'W', 's', 'S':
			return &rxNode{kind: rxnClass, class: &jsClass{escapes: []rune{e}}}, nil
		}
		i := p.i - 1
		r, _ := jsClassEscape(p.s, &i)
		return &rxNode{kind: rxnRune, r: r}, nil
	}
	return &rxNode{kind: rxnRune, r: c}, nil
}

type rxBody struct {
	look int
	node *rxNode
}

type rxCompiler struct {
	insts  []rxInst
	bodies []rxBody
}

func (c *rxCompiler) emit(in rxInst) int {
	pc := len(c.insts)
	if in.op != rxJump && in.op != rxSplit {
		in.next = pc + 1
	}
	c.insts = append(c.insts, in)
	return pc
}

// node emits n so that control falls through to what is emitted next.
func (c *rxCompiler) node(n *rxNode) {
	if len(c.insts) > maxProgramSize {
		return // compileJSRegex reports the size
	}
	switch n.kind {
	case rxnEmpty:
	case rxnRune:
		c.emit(rxInst{op: rxRune, r: n.r})
	case rxnAny:
		c.emit(rxInst{op: rxAny})
	case rxnClass:
		c.emit(rxInst{op: rxClass, class: n.class})
	case rxnBegin:
		c.emit(rxInst{op: rxBegin})
	case rxnEnd:
		c.emit(rxInst{op: rxEnd})
	case rxnWordB:
		c.emit(rxInst{op: rxWordB, neg: n.neg})
	case rxnLook:
		pc := c.emit(rxInst{op: rxLook, neg: n.neg})
		c.bodies = append(c.bodies, rxBody{look: pc, node: n.subs[0]})
	case rxnConcat:
		for _, s := range n.subs {
			c.node(s)
		}
	case rxnAlt:
		var exits []int
		for i, s := range n.subs {
			split := -1
			if i < len(n.subs)-1 {
				split = c.emit(rxInst{op: rxSplit})
				c.insts[split].next = split + 1
			}
			c.node(s)
			exits = append(exits, c.emit(rxInst{op: rxJump}))
			if split >= 0 {
				c.insts[split].alt = len(c.insts)
			}
		}
		for _, pc := range exits {
			c.insts[pc].next = len(c.insts)
		}
	case rxnRepeat:
		sub := n.subs[0]
		switch {
		case n.min == 0 && n.max == 1: // ?
			split := c.emit(rxInst{op: rxSplit})
			c.insts[split].next = split + 1
			c.node(sub)
			c.insts[split].alt = len(c.insts)
		case n.min == 0: // *
			loop := c.emit(rxInst{op: rxSplit})
			c.insts[loop].next = loop + 1
			c.node(sub)
			c.emit(rxInst{op: rxJump, next: loop})
			c.insts[loop].alt = len(c.insts)
		default: // +
			start := len(c.insts)
			c.node(sub)
			again := c.emit(rxInst{op: rxSplit, next: start})
			c.insts[again].alt = again + 1
		}
	}
}

// rxMatcher matches one program against one name.
type rxMatcher struct {
	prog   *rxProg
	s      []rune
	budget *Budget
	looks  map[[2]int]int8 // (look pc, position) → 1 holds, 2 fails, 3 pending
	sets   [][2]*rxSet     // reusable state sets, one pair per nesting depth
	depth  int
}

// matchRegex reports whether the whole of name matches prog (the program
// carries its own ^ and $).
func matchRegex(prog *rxProg, name string, budget *Budget) (bool, error) {
	if prog.never {
		return false, nil
	}
	m := &rxMatcher{prog: prog, s: []rune(name), budget: budget}
	return m.run(0, 0)
}

// run simulates the NFA from pc at position pos and reports whether any
// thread reaches rxMatch.
func (m *rxMatcher) run(pc, pos int) (bool, error) {
	if m.depth >= len(m.sets) {
		n := len(m.prog.insts)
		m.sets = append(m.sets, [2]*rxSet{newRxSet(n), newRxSet(n)})
	}
	cur, next := m.sets[m.depth][0], m.sets[m.depth][1]
	m.depth++
	defer func() { m.depth-- }()
	cur.clear()
	if hit, err := m.closure(cur, pc, pos); hit || err != nil {
		return hit, err
	}
	for ; pos < len(m.s) && len(cur.dense) > 0; pos++ {
		next.clear()
		r := m.s[pos]
		for _, pc := range cur.dense {
			in := &m.prog.insts[pc]
			var ok bool
			switch in.op {
			case rxRune:
				ok = r == in.r
			case rxAny:
				ok = !isLineTerminator(r)
			case rxClass:
				ok = in.class.matches(r)
			}
			if ok {
				if hit, err := m.closure(next, in.next, pos+1); hit || err != nil {
					return hit, err
				}
			}
		}
		cur, next = next, cur
	}
	return false, nil
}

// closure adds pc and every state reachable from it at pos without
// consuming input; hit reports reaching rxMatch.
func (m *rxMatcher) closure(set *rxSet, pc, pos int) (hit bool, err error) {
	stack := []int{pc}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !set.add(pc) {
			continue
		}
		if err := m.budget.spend(1); err != nil {
			return false, err
		}
		in := &m.prog.insts[pc]
		switch in.op {
		case rxMatch:
			return true, nil
		case rxSplit:
			stack = append(stack, in.alt, in.next)
		case rxJump:
			stack = append(stack, in.next)
		case rxBegin:
			if pos == 0 {
				stack = append(stack, in.next)
			}
		case rxEnd:
			if pos == len(m.s) {
				stack = append(stack, in.next)
			}
		case rxWordB:
			before := pos > 0 && isWordRune(m.s[pos-1])
			after := pos < len(m.s) && isWordRune(m.s[pos])
			if (before != after) != in.neg {
				stack = append(stack, in.next)
			}
		case rxLook:
			holds, err := m.look(pc, pos)
			if err != nil {
				return false, err
			}
			if holds {
				stack = append(stack, in.next)
			}
		}
	}
	return false, nil
}

// look evaluates the lookahead at pc for position pos, once.
func (m *rxMatcher) look(pc, pos int) (bool, error) {
	key := [2]int{pc, pos}
	switch m.looks[key] {
	case 1:
		return true, nil
	case 2, 3:
		// 3: the body reaches this lookahead again without consuming
		// anything; refusing keeps the answer defined and finite.
		return false, nil
	}
	if m.looks == nil {
		m.looks = map[[2]int]int8{}
	}
	m.looks[key] = 3
	found, err := m.run(m.prog.insts[pc].alt, pos)
	if err != nil {
		return false, err
	}
	holds := found != m.prog.insts[pc].neg
	if holds {
		m.looks[key] = 1
	} else {
		m.looks[key] = 2
	}
	return holds, nil
}

func isLineTerminator(r rune) bool {
	return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
}

func isWordRune(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

// rxSet is a sparse set of instruction offsets, cleared in O(1).
type rxSet struct {
	dense  []int
	sparse []int
}

func newRxSet(n int) *rxSet { return &rxSet{dense: make([]int, 0, n), sparse: make([]int, n)} }

func (s *rxSet) add(pc int) bool {
	i := s.sparse[pc]
	if i < len(s.dense) && s.dense[i] == pc {
		return false
	}
	s.sparse[pc] = len(s.dense)
	s.dense = append(s.dense, pc)
	return true
}

func (s *rxSet) clear() { s.dense = s.dense[:0] }

// jsClass is a JavaScript character class (no u flag).
type jsClass struct {
	negated bool
	ranges  []runeRange
	escapes []rune // d D w W s S
}

type runeRange struct{ lo, hi rune }

func (c *jsClass) matches(r rune) bool {
	in := false
	for _, rr := range c.ranges {
		if rr.lo <= r && r <= rr.hi {
			in = true
			break
		}
	}
	for _, e := range c.escapes {
		if in {
			break
		}
		in = classEscapeMatches(e, r)
	}
	return in != c.negated
}

func classEscapeMatches(e, r rune) bool {
	switch e {
	case 'd':
		return '0' <= r && r <= '9'
	case 'D':
		return !('0' <= r && r <= '9')
	case 'w':
		return isWordRune(r)
	case 'W':
		return !isWordRune(r)
	case 's':
		return isJSSpace(r)
	case 'S':
		return !isJSSpace(r)
	}
	return false
}

func isJSSpace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == ' ' || r == '\u00a0' ||
		r == '\ufeff' || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Zs, r)
}

// parseJSClass parses the class whose body starts at s[i] (just after the
// '['), returning it and the offset after its ']'.
func parseJSClass(s []rune, i int) (*jsClass, int, bool) {
	c := &jsClass{}
	if i < len(s) && s[i] == '^' {
		c.negated = true
		i++
	}
	type item struct {
		r      rune
		escape rune // non-zero for a class escape
	}
	read := func() (item, bool) {
		if s[i] != '\\' {
			r := s[i]
			i++
			return item{r: r}, true
		}
		if i+1 >= len(s) {
			return item{}, false
		}
		i++
		r, single := jsClassEscape(s, &i)
		i++
		if !single {
			return item{escape: r}, true
		}
		return item{r: r}, true
	}
	for {
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == ']' {
			return c, i + 1, true
		}
		lo, ok := read()
		if !ok {
			return nil, 0, false
		}
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			save := i
			i++
			hi, ok := read()
			if !ok {
				return nil, 0, false
			}
			if lo.escape == 0 && hi.escape == 0 {
				c.ranges = append(c.ranges, runeRange{lo.r, hi.r})
				continue
			}
			// Annex B: a range with a class escape at either end is the
			// union of its parts and a literal '-'.
			_ = save
			c.addItem(lo.r, lo.escape)
			c.ranges = append(c.ranges, runeRange{'-', '-'})
			c.addItem(hi.r, hi.escape)
			continue
		}
		c.addItem(lo.r, lo.escape)
	}
}

func (c *jsClass) addItem(r, escape rune) {
	if escape != 0 {
		c.escapes = append(c.escapes, escape)
		return
	}
	c.ranges = append(c.ranges, runeRange{r, r})
}
