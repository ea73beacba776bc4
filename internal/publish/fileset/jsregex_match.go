package fileset

import "unicode"

// Running a compiled program against a name (state sets, every step charged
// to the Budget) and the character classes it tests.

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
