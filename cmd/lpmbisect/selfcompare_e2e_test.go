package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// TestSelfCompareNeverDifferent compares a kernel image with itself
// LPMBISECT_SELF_COMPARES times (default 10) in each mode and requires that
// no benchmark is ever DIFFERENT: the false-positive rate the verdict rule
// promises. It takes about 10 minutes in icount and 15 in TCG on a quiet
// machine (17 paired: tcg-paired), so it runs only when asked:
//
//	LPMBISECT_SELF_COMPARE=icount,tcg,tcg-paired go test -run TestSelfCompareNeverDifferent -timeout 90m -v ./cmd/lpmbisect
func TestSelfCompareNeverDifferent(t *testing.T) {
	modes := os.Getenv("LPMBISECT_SELF_COMPARE")
	if modes == "" {
		t.Skip("set LPMBISECT_SELF_COMPARE=icount,tcg to run the self-compare false-positive check")
	}
	n := 10
	if v, err := strconv.Atoi(os.Getenv("LPMBISECT_SELF_COMPARES")); err == nil && v > 0 {
		n = v
	}
	args := vmArgs(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	for _, mode := range strings.Split(modes, ",") {
		t.Run(mode, func(t *testing.T) {
			verdicts := map[compare.Verdict]int{}
			for i := range n {
				accel, paired := strings.CutSuffix(mode, "-paired")
				flags := []string{"compare", "--no-insight", "--accel", accel, "--format", "json", "--seed", fmt.Sprint(i + 1)}
				if paired {
					flags = append(flags, "--paired")
				}
				code, stdout, stderr := runCLI(t, append(append(flags, args...), deb, deb)...)
				var doc report.Document
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("compare #%d: exit %d, %v\n%s", i+1, code, err, stderr)
				}
				var line []string
				for _, r := range doc.Rows {
					verdicts[r.Verdict]++
					units := fmt.Sprintf("%d+%d boots", r.A.Boots, r.B.Boots)
					if doc.Paired {
						units = fmt.Sprintf("%d pairs", r.Pairs)
					}
					line = append(line, fmt.Sprintf("%s %v %+.2f%% (%s", r.Benchmark, r.Verdict, deref(r.DeltaPct), units)+needs(r)+")")
					if r.Verdict == compare.Different {
						t.Errorf("compare #%d of the same image: %s is DIFFERENT (%+.2f%%, p=%.4f)", i+1, r.Benchmark, deref(r.DeltaPct), r.P)
					}
				}
				t.Logf("%s self-compare #%d: exit %d, %s: %s", mode, i+1, code, doc.Outcome, strings.Join(line, "; "))
				if code == exitRegression {
					t.Errorf("compare #%d of the same image exited %d (regression)", i+1, code)
				}
			}
			t.Logf("%s: %d self-compares, verdicts over all benchmarks: SAME %d, UNKNOWN %d, DIFFERENT %d",
				mode, n, verdicts[compare.Same], verdicts[compare.Unknown], verdicts[compare.Different])
		})
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func needs(r report.Row) string {
	if r.Verdict != compare.Unknown || r.BootsNeeded == 0 || r.NeedFor == nil {
		return ""
	}
	return fmt.Sprintf(", %v would need ~%d", *r.NeedFor, r.BootsNeeded)
}
