package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
)

// WriteBenchmarks lists benchmarks for people: name with the parameters p
// gives, minimum kernel and needs, what each family measures, the
// parameters that appear in names and the presets.
func WriteBenchmarks(w io.Writer, benches []*workloads.Benchmark, p workloads.Params) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tMIN KERNEL\tNEEDS")
	for _, b := range benches {
		var needs []string
		for _, r := range b.Requires {
			needs = append(needs, fmt.Sprintf("%s (%s)", r.Feature, r.MinKernel))
		}
		if b.MinCPUs > 1 {
			needs = append(needs, fmt.Sprintf("%d vCPUs (--cpus)", b.MinCPUs))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.FullName(p), b.MinKernel(), strings.Join(needs, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWHAT EACH MEASURES")
	seen := map[string]bool{}
	for _, b := range benches {
		if seen[b.Doc] {
			continue
		}
		seen[b.Doc] = true
		fmt.Fprintf(w, "  %s\n      %s\n", b.Name, b.Doc)
	}
	fmt.Fprintln(w, "\nPARAMETERS IN NAMES (flags of run and compare)")
	for _, pi := range workloads.ParamInfos {
		fmt.Fprintf(w, "  %-14s --%-14s %s\n", pi.Name, strings.ReplaceAll(pi.Key, "_", "-"), pi.Doc)
	}
	fmt.Fprintln(w, "\nPRESETS (--bench NAME)")
	for _, pr := range workloads.Presets {
		fmt.Fprintf(w, "  %-9s %-24s %s\n", pr.Name, pr.Pattern, pr.Doc)
	}
	_, err := fmt.Fprintf(w, "\nThe default --bench is %s.\n", workloads.DefaultBench)
	return err
}
