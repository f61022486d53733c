package workloads_test

// The ring buffer's VM tests boot real kernels under icount. No kernel CI
// fetches has overwrite mode (BPF_F_RB_OVERWRITE, Linux 6.19; Debian 12
// serves 6.1 and 6.12), so they split in two:
//
//   - TestRingbufOnDebian612 always runs (it fails under
//     LPMBISECT_REQUIRE_VM=1 when the .deb is missing): Debian's 6.12 must
//     measure the consumer and producer rows and report the overwrite rows
//     unsupported, from the probe that creates a ring with the flag.
//   - TestRingbufOverwriteKernel boots a kernel that has the mode, named by
//     LPMBISECT_RB_OVERWRITE_KERNEL (a bzImage, a build directory or a
//     .deb), e.g. Debian's linux-source-6.12 with the mode backported and
//     built as docs/ringbuf.md says. It skips when the variable is unset:
//     neither the patched image nor a kernel build is part of CI.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// overwriteKernelEnv names a kernel (bzImage, build directory or .deb)
// that has BPF_F_RB_OVERWRITE, for TestRingbufOverwriteKernel.
const overwriteKernelEnv = "LPMBISECT_RB_OVERWRITE_KERNEL"

// bootRingbuf boots kernel once under icount with the ring buffer preset
// (one vCPU: the producers=1 rows) and returns its results and notes.
func bootRingbuf(t *testing.T, kernel string) ([]*benchfmt.Result, []wire.Note) {
	t.Helper()
	setup, err := measure.NewSetup(measure.Options{
		Accel: wire.AccelIcount, Guest: testguest.Path(t), CacheDir: testkernels.Cache(t), RunDir: t.TempDir(),
		Plan:        measure.GuestPlan{Bench: "ringbuf", Samples: 3, Rounds: 2, Entries: 1000},
		BootTimeout: 3 * time.Minute, ProgressTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatalf("NewSetup: %v", err)
	}
	r, err := setup.Start([]string{kernel}, measure.RunOptions{})
	if err != nil {
		t.Fatalf("Start(%s): %v", kernel, err)
	}
	if err := r.Measure(context.Background(), 1); err != nil {
		t.Fatalf("boot %s: %v", kernel, err)
	}
	return r.Results(), r.Summary().Notes
}

// rows groups the results by benchmark name: each sample's value of unit.
func rows(results []*benchfmt.Result, unit string) map[string][]float64 {
	out := map[string][]float64{}
	for _, res := range results {
		if v, ok := res.Value(unit); ok {
			out[string(res.Name)] = append(out[string(res.Name)], v)
		}
	}
	return out
}

func unsupportedText(notes []wire.Note) string {
	var b strings.Builder
	for _, n := range notes {
		if n.Key == wire.KeyUnsupported {
			b.WriteString(n.Text + "\n")
		}
	}
	return b.String()
}

// Ring buffer rows of one vCPU.
var (
	ringbufOrdinaryRows = []string{
		"RingBuf/api=reserve/mode=consumer/producers=1", "RingBuf/api=output/mode=consumer/producers=1",
		"RingBuf/api=reserve/mode=producer/producers=1", "RingBuf/api=output/mode=producer/producers=1",
	}
	ringbufOverwriteRows = []string{
		"RingBuf/api=reserve/mode=overwrite/producers=1", "RingBuf/api=output/mode=overwrite/producers=1",
	}
)

// TestRingbufOnDebian612 boots Debian's 6.12, which has ring buffers but
// not overwrite mode (6.19): the consumer and producer rows must measure,
// and the overwrite rows be reported unsupported by the probe (which
// creates a ring with the flag), not fail.
func TestRingbufOnDebian612(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(t, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
	results, notes := bootRingbuf(t, testkernels.Deb(t, testkernels.Debian612))
	insn, drops := rows(results, "insn/op"), rows(results, "drops/op")
	for _, name := range ringbufOrdinaryRows {
		if len(insn[name]) != 3 || insn[name][0] <= 0 {
			t.Errorf("%s: insn/op %v; want 3 positive samples", name, insn[name])
		}
		if strings.Contains(name, "mode=producer") && (len(drops[name]) != 3 || drops[name][0] != 0) {
			t.Errorf("%s: drops/op %v; want 0 (the ring holds a sample twice over)", name, drops[name])
		}
	}
	unsupported := unsupportedText(notes)
	for _, name := range ringbufOverwriteRows {
		if len(insn[name]) != 0 {
			t.Errorf("%s: results %v on a kernel without overwrite mode", name, insn[name])
		}
		if !strings.Contains(unsupported, "Benchmark"+name+" needs BPF_F_RB_OVERWRITE (Linux 6.19)") {
			t.Errorf("%s: no unsupported note; notes:\n%s", name, unsupported)
		}
	}
	for _, n := range notes {
		if n.Key == wire.KeyFailed {
			t.Errorf("failed: %s", n.Text)
		}
	}
}

// TestRingbufOverwriteKernel boots the kernel named by
// LPMBISECT_RB_OVERWRITE_KERNEL and skips without it (see the top of this
// file). The kernel must have overwrite mode: its overwrite rows must
// measure (the guest has checked that the filled ring overwrote) with no
// record refused, and every overwrite sample must cost more than every
// producer sample, whose records never overwrite. (Samples of one row are
// not required to agree: a timer tick inside the timed batches adds about
// 2 insn/op at this sample size, while overwriting adds 16 on 6.12.)
func TestRingbufOverwriteKernel(t *testing.T) {
	kernel := os.Getenv(overwriteKernelEnv)
	if kernel == "" {
		t.Skipf("%s not set: no kernel with BPF_F_RB_OVERWRITE to boot", overwriteKernelEnv)
	}
	results, notes := bootRingbuf(t, kernel)
	if u := unsupportedText(notes); u != "" {
		t.Errorf("unsupported on a kernel with overwrite mode:\n%s", u)
	}
	insn, drops := rows(results, "insn/op"), rows(results, "drops/op")
	for _, api := range []string{"reserve", "output"} {
		over, prod := insn["RingBuf/api="+api+"/mode=overwrite/producers=1"], insn["RingBuf/api="+api+"/mode=producer/producers=1"]
		t.Logf("%s: overwrite %v insn/op, producer %v insn/op", api, over, prod)
		if len(over) != 3 || len(prod) != 3 {
			t.Fatalf("%s: %d overwrite and %d producer samples; want 3 each", api, len(over), len(prod))
		}
		if !(min(over[0], over[1], over[2]) > max(prod[0], prod[1], prod[2])) {
			t.Errorf("%s: overwrite %v insn/op not above producer %v: the records did not overwrite", api, over, prod)
		}
		for _, d := range drops["RingBuf/api="+api+"/mode=overwrite/producers=1"] {
			if d != 0 {
				t.Errorf("%s overwrite: drops/op %v; want 0 (a ring in overwrite mode refuses nothing)", api, d)
			}
		}
	}
}
