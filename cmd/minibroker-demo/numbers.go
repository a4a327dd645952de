package main

import (
	"fmt"
	"slices"
	"strings"
)

// numbers is a multiset of record numbers, kept as counts.
type numbers map[int64]int

func (n numbers) addAll(o numbers) {
	for k, c := range o {
		n[k] += c
	}
}

// sorted returns the distinct numbers in order.
func (n numbers) sorted() []int64 {
	out := make([]int64, 0, len(n))
	for k := range n {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ranges is n's distinct numbers as closed intervals, the ledgers' JSON
// form ([[1,500],[502,900]]).
func (n numbers) ranges() [][2]int64 {
	var out [][2]int64
	for _, k := range n.sorted() {
		if l := len(out); l > 0 && out[l-1][1] == k-1 {
			out[l-1][1] = k
		} else {
			out = append(out, [2]int64{k, k})
		}
	}
	return out
}

func fromRanges(rs [][2]int64) numbers {
	n := numbers{}
	for _, r := range rs {
		for k := r[0]; k <= r[1]; k++ {
			n[k]++
		}
	}
	return n
}

// repeated returns the numbers counted more than once.
func (n numbers) repeated() []int64 {
	var out []int64
	for _, k := range n.sorted() {
		if n[k] > 1 {
			out = append(out, k)
		}
	}
	return out
}

// missingFrom returns the numbers of n that other lacks.
func (n numbers) missingFrom(other numbers) []int64 {
	var out []int64
	for _, k := range n.sorted() {
		if other[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}

// brief prints at most 10 numbers of a list.
func brief(ns []int64) string {
	if len(ns) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, k := range ns {
		if i == 10 {
			fmt.Fprintf(&b, " … (%d in all)", len(ns))
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprint(&b, k)
	}
	return b.String()
}
