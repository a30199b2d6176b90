package benchmarks

// schedule is the order of a point's runs: for each repeat, the indexes of
// the variants in the order they run. Repeat i starts at variant i mod n
// and goes round, so over n repeats every variant runs once in every
// position: none always runs first after the warm-up, when the broker has
// been idle, or always right after the same neighbour.
func schedule(variants, repeats int) [][]int {
	out := make([][]int, 0, repeats)
	for rep := range repeats {
		order := make([]int, variants)
		for j := range order {
			order[j] = (rep + j) % variants
		}
		out = append(out, order)
	}
	return out
}
