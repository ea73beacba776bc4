package fileset

import (
	"context"
	"errors"
	"fmt"
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
