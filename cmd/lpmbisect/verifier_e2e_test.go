package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// movsxWorkload has one BPF ISA v4 instruction: Debian 6.1's verifier
// rejects it, 6.12's accepts it.
var movsxWorkload = filepath.Join("..", "..", "examples", "movsx", "movsx.o")

// veristatRows reads veristat CSV, by program.
func veristatRows(t *testing.T, text string) (head []string, rows map[string][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("veristat CSV: %v\n%s", err, text)
	}
	rows = map[string][]string{}
	for _, r := range recs[1:] {
		rows[r[1]] = r
	}
	return recs[0], rows
}

// TestVerifierOnDebianKernels compares Debian 6.1 with 6.12 under icount
// on the verifier rows of lpmbisect's programs and of examples/movsx,
// which only 6.12 accepts, in veristat's compare CSV, KCIDB and text; and
// one kernel's rows of examples/xdp-lpm in veristat's CSV.
func TestVerifierOnDebianKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	a, b := testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)
	out := filepath.Join(t.TempDir(), "ab.txt")
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--accel", "icount", "--bench", "verifier", "--no-controls",
		"--boots", "2", "--max-boots", "2", "--workload", movsxWorkload, "--format", "veristat", "--out", out}, args...), a, b)...)
	if code != exitOK && code != exitRegression && code != exitInconclusive {
		t.Fatalf("lpmbisect compare: exit %d\n%s", code, stderr)
	}
	t.Logf("veristat -C CSV:\n%s", stdout)
	head, rows := veristatRows(t, stdout)
	if strings.Join(head[:5], ",") != "file_name,prog_name,verdict_base,verdict_comp,verdict_diff" {
		t.Errorf("header %v; want veristat -C's", head)
	}
	if r := rows["xdp_movsx"]; r == nil || strings.Join(r[:5], ",") != "movsx.o,xdp_movsx,failure,success,MISMATCH" {
		t.Errorf("xdp_movsx row %v; want movsx.o, failure on 6.1, success on 6.12, MISMATCH", r)
	}
	// Every program lpmbisect's own benchmarks load, verified by both
	// kernels but for the ring buffer's overwrite mode (Linux 6.19), which
	// neither has: those rows are unsupported, not failed.
	own := 0
	for _, b := range workloads.Registry() {
		prog, ok := strings.CutPrefix(b.FullName(workloads.DefaultParams), wire.VerifierPrefix)
		if !ok {
			continue
		}
		own++
		r := rows[prog]
		if strings.Contains(prog, "mode=overwrite") {
			if r != nil {
				t.Errorf("%s row %v; want none (BPF_F_RB_OVERWRITE unsupported)", prog, r)
			}
			continue
		}
		if r == nil || strings.Join(r[:5], ",") != "lpmbisect,"+prog+",success,success,MATCH" {
			t.Errorf("%s row %v; want accepted by both", prog, r)
			continue
		}
		if n, err := strconv.Atoi(r[8]); err != nil || n < 5 {
			t.Errorf("%s total_insns_base %q; want a count of processed instructions", prog, r[8])
		}
	}
	if own < 50 || len(rows) != own-2+1 {
		t.Errorf("veristat CSV has %d programs; want lpmbisect's %d but the 2 overwrite producers, and xdp_movsx", len(rows), own)
	}

	// What BPF CI's veristat_compare.py reads: veristat --emit
	// file,prog,verdict,states -C -o csv.
	code, stdout, stderr = runCLI(t, "stat", "--format", "veristat", "--veristat-emit", "file,prog,verdict,states", out)
	head, rows = veristatRows(t, stdout)
	if strings.Join(head, ",") != "file_name,prog_name,verdict_base,verdict_comp,verdict_diff,total_states_base,total_states_comp,total_states_diff" {
		t.Errorf("stat --veristat-emit file,prog,verdict,states: exit %d, header %v; want veristat_compare.py's columns\n%s", code, head, stderr)
	}
	if r := rows["xdp_movsx"]; r == nil || strings.Join(r[2:5], ",") != "failure,success,MISMATCH" {
		t.Errorf("stat --veristat-emit: xdp_movsx row %v; want failure, success, MISMATCH", r)
	}
	if code, _, stderr = runCLI(t, "stat", "--format", "veristat", "--veristat-emit", "file,prog,jited", out); code != exitUsage || !strings.Contains(stderr, `--veristat-emit "jited" is not one of veristat's stats`) {
		t.Errorf("stat --veristat-emit file,prog,jited: exit %d, %s; want %d and the name refused", code, stderr, exitUsage)
	}

	code, stdout, stderr = runCLI(t, "stat", "--format", "kcidb", out)
	var doc struct {
		Version struct{ Major, Minor int }
		Tests   []struct {
			Path, Status string
			Number       *struct {
				Value float64
				Unit  string
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Version.Major != 4 || doc.Version.Minor != 4 || len(doc.Tests) == 0 {
		t.Fatalf("stat --format kcidb: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	found := false
	for _, test := range doc.Tests {
		if test.Path == "lpmbisect.Verifier.prog_xdp_movsx.insns-processed" && test.Status == "DONE" && test.Number != nil && test.Number.Value > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("stat --format kcidb lacks xdp_movsx's insns-processed on 6.12:\n%s", stdout)
	}
	_, stdout, _ = runCLI(t, "stat", out)
	if text := strings.Join(strings.Fields(stdout), " "); !strings.Contains(text, "Verifier: xdp_movsx (workload) starts verifying: A rejected it (BPF_MOV uses reserved fields), B accepts it.") {
		t.Errorf("stat's text does not say 6.1 rejects xdp_movsx:\n%s", stdout)
	}

	code, stdout, stderr = runCLI(t, append(append([]string{"run", "--accel", "icount", "--samples", "1", "--workload", exampleWorkload,
		"--workload-maps", exampleWorkloadMaps, "--format", "veristat"}, args...), b)...)
	if code != exitOK {
		t.Fatalf("lpmbisect run --format veristat: exit %d\n%s", code, stderr)
	}
	t.Logf("veristat CSV of 6.12:\n%s", stdout)
	head, rows = veristatRows(t, stdout)
	if fmt.Sprint(head) != "[file_name prog_name verdict duration total_insns total_states peak_states max_states_per_insn max_mark_read_len prog_size prog_size_jited prog_type attach_type stack_depth mem_peak]" {
		t.Errorf("header %v; want veristat's CSV columns", head)
	}
	// Debian 6.12 as veristat v0.5.1 saw the same object in a guest of
	// its own: 49 instructions processed, 3 states, 43 instructions
	// loaded, 287 bytes of JITed code, 16 bytes of stack.
	if r := rows["xdp_lpm"]; r == nil || strings.Join(append([]string{r[0], r[2]}, r[4:]...), ",") != "xdp_lpm.o,success,49,3,3,0,3,43,287,xdp,xdp,16,N/A" {
		t.Errorf("xdp_lpm row %v; want xdp_lpm.o accepted, with the stats veristat itself reads on 6.12", r)
	}
	if !sortedByFileAndProgram(stdout) {
		t.Errorf("rows not in veristat's order (by file, then program):\n%s", stdout)
	}
}

// sortedByFileAndProgram reports whether the lines of a veristat CSV after
// its header are in veristat's order: by file, then program, as bytes.
func sortedByFileAndProgram(csv string) bool {
	lines := strings.Split(strings.TrimSpace(csv), "\n")[1:]
	return slices.IsSortedFunc(lines, func(a, b string) int {
		fa, pa, _ := strings.Cut(a, ",")
		fb, pb, _ := strings.Cut(b, ",")
		pa, _, _ = strings.Cut(pa, ",")
		pb, _, _ = strings.Cut(pb, ",")
		return cmp.Or(strings.Compare(fa, fb), strings.Compare(pa, pb))
	})
}
