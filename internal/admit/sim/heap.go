package sim

import "time"

// event is a visitor's next request, or a session's end.
type event struct {
	at      time.Duration // since the start
	seq     uint64        // ties broken by scheduling order: a total order
	visitor int32
	version int32 // sessions: the visitor's session version it ends
}

func (a event) less(b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// eventHeap is a binary min-heap of events (container/heap without the
// interface boxing, since the simulator pushes millions of them).
type eventHeap struct {
	items []event
	seq   uint64
}

func (h *eventHeap) Len() int { return len(h.items) }

func (h *eventHeap) push(e event) {
	h.seq++
	e.seq = h.seq
	h.items = append(h.items, e)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].less(h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *eventHeap) peek() event { return h.items[0] }

func (h *eventHeap) pop() event {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.items[l].less(h.items[m]) {
			m = l
		}
		if r < last && h.items[r].less(h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
