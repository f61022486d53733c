package report_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/present/report"
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

func ExampleWriteTable() {
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
	fmt.Println(report.Headline(rep.Rows[0]))
	fmt.Println()
	if err := report.WriteTable(os.Stdout, rep); err != nil {
		log.Fatal(err)
	}
	// Output:
	// LPMTrie/op=lookup: -21.3% insn/op (better), DIFFERENT, p=0.002, 6+6 boots
	//
	// boots are the unit: each boot counts once, as the median of its samples
	// centre = median over boots ± 95% confidence interval; in-boot = median over boots of (max-min)/median; α=0.05
	// verdict (look 1): DIFFERENT = significant at α=0.05 over all rows and looks, and shown beyond ±1%; SAME = shown within ±1%; else UNKNOWN; every row by the statistical rule (no calibrated jitter bounds: see lpmbisect calibrate)
	//
	//                   │ A: 6.1.0-57-cloud-amd64 │ B: 6.12.117+deb12-cloud-amd64                             │
	//                   │ insn/op         in-boot │ insn/op        in-boot      vs A                verdict   │
	// LPMTrie/op=lookup    1065.0 ± 0%         0%     838.0 ± 0%        0%   -21.31%  p=0.002 n=6+6 DIFFERENT
}
