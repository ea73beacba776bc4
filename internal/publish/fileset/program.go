package fileset

// A segment pattern compiles to a small Thompson NFA. Go's regexp (RE2) has
// no lookahead, which minimatch needs for !(...) and for keeping wildcards
// off leading dots, so the matcher is written here; simulating the NFA
// keeps matching linear per position instead of backtracking.

type opcode uint8

const (
	opRune         opcode = iota // consume inst.r
	opAnyRune                    // consume any character
	opClass                      // consume a character in inst.class
	opSplit                      // continue at both next and alt
	opJump                       // continue at next
	opNoLeadingDot               // fail at offset 0 of a name starting with '.'
	opNegate                     // continue at next unless alt matches here
	opMatch                      // accept at the end of the segment
)

type inst struct {
	op    opcode
	r     rune
	class *charClass
	next  int
	alt   int
}

type program struct {
	insts []inst
}

func compileProgram(nodes []node) *program {
	c := &compiler{}
	c.sequence(nodes)
	c.emit(inst{op: opMatch})
	return &program{insts: c.insts}
}

type compiler struct {
	insts []inst
}

// emit appends an instruction whose next defaults to the one after it.
func (c *compiler) emit(in inst) int {
	pc := len(c.insts)
	if in.op != opJump && in.op != opSplit {
		in.next = pc + 1
	}
	c.insts = append(c.insts, in)
	return pc
}

func (c *compiler) here() int { return len(c.insts) }

func (c *compiler) sequence(nodes []node) {
	for _, n := range nodes {
		c.node(n)
	}
}

// node emits n so that control falls through to whatever is emitted next.
// Wildcards are guarded by opNoLeadingDot: with node-glob's default, a name
// starting with '.' is matched only by a literal '.' in the pattern.
func (c *compiler) node(n node) {
	switch n.kind {
	case nodeLiteral:
		c.emit(inst{op: opRune, r: n.r})
	case nodeAnyRune:
		c.emit(inst{op: opNoLeadingDot})
		c.emit(inst{op: opAnyRune})
	case nodeClass:
		c.emit(inst{op: opNoLeadingDot})
		c.emit(inst{op: opClass, class: n.class})
	case nodeStar:
		c.emit(inst{op: opNoLeadingDot})
		c.star()
	case nodeExtglob:
		c.extglob(n)
	}
}

// star emits a loop consuming any number of characters.
func (c *compiler) star() {
	loop := c.here()
	c.emit(inst{op: opSplit, next: loop + 1, alt: loop + 2})
	c.insts[c.emit(inst{op: opAnyRune})].next = loop
}

// alternatives emits each alternative in turn and returns the jumps at
// their ends, for the caller to point at the continuation.
func (c *compiler) alternatives(alts [][]node) []int {
	var exits []int
	for i, alt := range alts {
		split := -1
		if i < len(alts)-1 {
			split = c.emit(inst{op: opSplit})
			c.insts[split].next = split + 1
		}
		c.sequence(alt)
		exits = append(exits, c.emit(inst{op: opJump}))
		if split >= 0 {
			c.insts[split].alt = c.here()
		}
	}
	return exits
}

func (c *compiler) patch(jumps []int, target int) {
	for _, pc := range jumps {
		c.insts[pc].next = target
	}
}

func (c *compiler) extglob(n node) {
	switch n.ext {
	case '@': // exactly one
		exits := c.alternatives(n.alts)
		c.patch(exits, c.here())
	case '?': // zero or one
		split := c.emit(inst{op: opSplit})
		c.insts[split].next = split + 1
		exits := c.alternatives(n.alts)
		end := c.here()
		c.patch(exits, end)
		c.insts[split].alt = end
	case '*': // zero or more
		loop := c.emit(inst{op: opSplit})
		c.insts[loop].next = loop + 1
		exits := c.alternatives(n.alts)
		c.patch(exits, loop)
		c.insts[loop].alt = c.here()
	case '+': // one or more
		loop := c.here()
		exits := c.alternatives(n.alts)
		again := c.emit(inst{op: opSplit, next: loop})
		c.patch(exits, again)
		c.insts[again].alt = c.here()
	case '!':
		// minimatch's reading: at this point the rest of the name must not
		// match any alternative followed by the rest of the pattern; then
		// any run of characters may follow. So "!(*.min).js" rejects
		// "a.min.js" and "!(foo)*" rejects "foobar".
		c.emit(inst{op: opNoLeadingDot})
		negate := c.emit(inst{op: opNegate})
		c.star()
		skip := c.emit(inst{op: opJump})
		c.insts[negate].alt = c.here()
		exits := c.alternatives(n.alts)
		end := c.here()
		c.patch(exits, end)
		c.insts[skip].next = end
	}
}

// match reports whether the whole of name matches the program.
func (p *program) match(name string) bool {
	m := &matcher{prog: p, s: []rune(name)}
	return m.run(0, 0)
}

// matcher holds the state of matching one name.
type matcher struct {
	prog *program
	s    []rune
	// negations caches opNegate outcomes by (pc, pos): each is a full
	// sub-match, and nested extglobs would otherwise repeat them.
	negations map[[2]int]negation
}

type negation uint8

const (
	negationPending negation = iota + 1
	negationHolds
	negationFails
)

// run simulates the NFA from pc at rune offset pos and reports whether it
// reaches opMatch at the end of the name.
func (m *matcher) run(pc, pos int) bool {
	n := len(m.prog.insts)
	cur, next := newStateSet(n), newStateSet(n)
	m.addClosure(cur, pc, pos)
	for ; ; pos++ {
		if pos == len(m.s) {
			for _, pc := range cur.dense {
				if m.prog.insts[pc].op == opMatch {
					return true
				}
			}
			return false
		}
		next.clear()
		r := m.s[pos]
		for _, pc := range cur.dense {
			in := &m.prog.insts[pc]
			var ok bool
			switch in.op {
			case opRune:
				ok = r == in.r
			case opAnyRune:
				ok = true
			case opClass:
				ok = in.class.matches(r)
			}
			if ok {
				m.addClosure(next, in.next, pos+1)
			}
		}
		if len(next.dense) == 0 {
			return false
		}
		cur, next = next, cur
	}
}

// addClosure adds pc and every state reachable from it without consuming
// input at pos.
func (m *matcher) addClosure(set *stateSet, pc, pos int) {
	stack := []int{pc}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !set.add(pc) {
			continue
		}
		in := &m.prog.insts[pc]
		switch in.op {
		case opSplit:
			stack = append(stack, in.alt, in.next)
		case opJump:
			stack = append(stack, in.next)
		case opNoLeadingDot:
			if pos != 0 || len(m.s) == 0 || m.s[0] != '.' {
				stack = append(stack, in.next)
			}
		case opNegate:
			if m.negationHolds(pc, pos) {
				stack = append(stack, in.next)
			}
		}
	}
}

func (m *matcher) negationHolds(pc, pos int) bool {
	key := [2]int{pc, pos}
	switch m.negations[key] {
	case negationHolds:
		return true
	case negationFails, negationPending:
		// Pending means the negated alternatives lead back here without
		// consuming anything, e.g. "*(!(?(a)))"; refusing the path keeps
		// the answer defined and the recursion finite.
		return false
	}
	if m.negations == nil {
		m.negations = make(map[[2]int]negation)
	}
	m.negations[key] = negationPending
	holds := !m.run(m.prog.insts[pc].alt, pos)
	if holds {
		m.negations[key] = negationHolds
	} else {
		m.negations[key] = negationFails
	}
	return holds
}

// stateSet is a sparse set of instruction offsets, cleared in O(1).
type stateSet struct {
	dense  []int
	sparse []int
}

func newStateSet(n int) *stateSet {
	return &stateSet{dense: make([]int, 0, n), sparse: make([]int, n)}
}

func (s *stateSet) add(pc int) bool {
	i := s.sparse[pc]
	if i < len(s.dense) && s.dense[i] == pc {
		return false
	}
	s.sparse[pc] = len(s.dense)
	s.dense = append(s.dense, pc)
	return true
}

func (s *stateSet) clear() { s.dense = s.dense[:0] }
