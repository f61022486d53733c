package compare_test

import (
	"fmt"
	"log"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// A results file as the host writes it: instruction counts (TCG icount) of
// six boots per side, interleaved, two samples per boot.
const resultsFile = `accel: tcg-icount
side: A
kernel: 6.1.0-57-cloud-amd64
boot: 1
BenchmarkLPMTrie/op=lookup 2000 1065 insn/op
BenchmarkLPMTrie/op=lookup 2000 1065 insn/op
side: B
kernel: 6.12.117+deb12-cloud-amd64
BenchmarkLPMTrie/op=lookup 2000 838 insn/op
BenchmarkLPMTrie/op=lookup 2000 838 insn/op
`

func Example() {
	// Repeat the two boots above five more times.
	var text strings.Builder
	for boot := 1; boot <= 6; boot++ {
		text.WriteString(strings.ReplaceAll(resultsFile, "boot: 1", fmt.Sprintf("boot: %d", boot)))
	}

	var results []*benchfmt.Result
	r := benchfmt.NewReader(strings.NewReader(text.String()), "results.txt")
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok {
			results = append(results, res.Clone()) // the Reader reuses its Result
		}
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}

	rep, err := compare.Build(results, compare.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// The report is data; package report renders it as tables and
	// headlines.
	row := rep.Rows[0]
	fmt.Printf("%s (%s): %v\n", row.Benchmark, row.Unit, row.Verdict)
	fmt.Printf("A: median %v of %d boots, B: median %v of %d boots\n", row.A.Center, row.A.Boots, row.B.Center, row.B.Boots)
	fmt.Printf("change %.2f%%, p=%.4f; beyond ±%v%%: Holm-adjusted p=%.4f <= level %v\n",
		row.DeltaPct, row.P, 100*rep.MinEffect, row.PAdj, rep.Look.DifferentLevel)
	fmt.Printf("worse: %v; outcome: %v\n", row.Worse(), rep.Outcome(compare.FailOnRegression))
	// Output:
	// LPMTrie/op=lookup (insn/op): DIFFERENT
	// A: median 1065 of 6 boots, B: median 838 of 6 boots
	// change -21.31%, p=0.0022; beyond ±1%: Holm-adjusted p=0.0022 <= level 0.05
	// worse: false; outcome: no regression
}
