// Package textdist measures how far apart two short strings are, for typo
// tolerance: search that forgives a slip and "did you mean" hints.
package textdist

// Distance is the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes), giving up with k+1 as soon as every alignment exceeds k.
func Distance(a, b string, k int) int {
	// Three rolling rows: two back are needed for transpositions.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > k {
			return k + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
