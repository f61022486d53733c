package main

import (
	"os"
	"regexp"
	"strings"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/wire"
)

// workloadFlags are --workload, --packet and --workload-maps: a user's BPF
// program as a benchmark.
type workloadFlags struct {
	object, packet, maps string
}

func workloadOpts(r *invocation) []opt {
	f := &r.workload
	return []opt{
		{Name: "workload", Ptr: &f.object, Usage: "FILE.o[:PROGRAM]: also load and verify every program of this BPF object (or PROGRAM alone) for its verifier statistics, and time those BPF_PROG_TEST_RUN runs (XDP, TC, socket filter, cgroup skb, LWT) beside a noop of their type; alone when --bench is not given"},
		{Name: "packet", Ptr: &f.packet, Usage: "input of the --workload program's test runs (default: a 64-byte Ethernet/IPv4/UDP packet)"},
		{Name: "workload-maps", Ptr: &f.maps, Usage: "entries for the --workload program's maps: lines of MAP KEY VALUE in hex"},
	}
}

// applyWorkload checks the --workload object before any boot and adds it
// to o: its files to every initramfs, its programs to the plan, and, when
// --bench was not given, a selection of their benchmarks only.
func (r *invocation) applyWorkload(o *measure.Options, benchGiven bool) error {
	f := r.workload
	if f.object == "" {
		if f.packet != "" || f.maps != "" {
			return usageError("--packet and --workload-maps need --workload FILE.o[:PROGRAM]")
		}
		return nil
	}
	path, prog, _ := strings.Cut(f.object, ":")
	progs, err := workloads.InspectWorkload(path, prog)
	if err != nil {
		return usageError("--workload: %v", err)
	}
	r.workloadProgs = progs
	o.Plan.Workload, o.Plan.Verify = progs.Plan()
	if !benchGiven {
		o.Plan.Bench = workloadBench(progs)
	}
	o.Files = append(o.Files, initramfs.File{Host: path, Archive: wire.WorkloadObject})
	for _, in := range []struct{ flag, path, archive string }{{"packet", f.packet, wire.WorkloadPacket}, {"workload-maps", f.maps, wire.WorkloadMaps}} {
		if in.path == "" {
			continue
		}
		if fi, err := os.Stat(in.path); err != nil || !fi.Mode().IsRegular() {
			return usageError("--%s %s: not a readable file (%v)", in.flag, in.path, err)
		}
		o.Files = append(o.Files, initramfs.File{Host: in.path, Archive: in.archive})
	}
	return nil
}

// workloadBench selects the benchmarks of the --workload programs alone:
// the timed ones' Workload rows and every one's verifier row.
func workloadBench(p workloads.WorkloadPrograms) string {
	return "^(Workload/|" + regexp.QuoteMeta(wire.VerifierPrefix) + "(" + strings.Join(p.Verified, "|") + ")$)"
}
