package nightly

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestStandingReference: last night's reference boots stand for tonight's
// only under icount, for the same reference image, with everything the
// counts depend on unchanged (QEMU, CPU model, lpmbisect, params),
// and only when there are as many as a night boots.
func TestStandingReference(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "guest")
	qemu := filepath.Join(dir, "qemu") // answers --version only
	if err := os.WriteFile(guest, []byte("a guest program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(qemu, []byte("#!/bin/sh\necho 'QEMU emulator version 7.2.22 (a test)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := func(accel wire.Accel) *bisect.Bisector {
		ms, err := measure.NewSetup(measure.Options{Accel: accel, Guest: guest, QEMU: qemu, CacheDir: dir, RunDir: dir,
			Plan: measure.GuestPlan{Bench: "lookup", Samples: 2, Entries: 1000}})
		if err != nil {
			t.Fatalf("NewSetup: %v", err)
		}
		return &bisect.Bisector{Setup: &campaign.Setup{Measure: ms}}
	}
	icount := setup(wire.AccelIcount)
	ref := &kernel.Kernel{SHA256: strings.Repeat("ab", 32)}
	prev := history.Night{Reference: history.Kernel{ImageSHA256: ref.SHA256}}
	boot := func(change map[string]string) []*benchfmt.Result {
		labels := map[string]string{wire.KeyAccel: string(wire.AccelIcount), wire.KeyImage: ref.SHA256[:12], wire.KeyQEMU: "7.2.22",
			wire.KeyCPUModel: vmrunner.CPUModel(wire.AccelIcount), wire.KeyVersion: version.String(), wire.KeyParams: paramsKey(t, icount)}
		for k, v := range change {
			labels[k] = v
		}
		res := &benchfmt.Result{Name: benchfmt.Name("LPMTrie/op=lookup/keys=random/entries=1000"), Iters: 1,
			Values: []benchfmt.Value{{Value: 777.5, Unit: "insn/op"}}}
		for k, v := range labels {
			res.SetConfig(k, v)
		}
		return []*benchfmt.Result{res}
	}
	two := func(change map[string]string) [][]*benchfmt.Result {
		return [][]*benchfmt.Result{boot(nil), boot(change)}
	}
	for _, c := range []struct {
		name  string
		setup *bisect.Bisector
		prev  history.Night
		boots [][]*benchfmt.Result
		stand bool
	}{
		{"all the same", icount, prev, two(nil), true},
		{"three stored, two needed", icount, prev, append(two(nil), boot(nil)), true},
		{"one stored", icount, prev, two(nil)[:1], false},
		{"wall time", setup(wire.AccelTCG), prev, two(nil), false},
		{"another reference image", icount, history.Night{Reference: history.Kernel{ImageSHA256: strings.Repeat("cd", 32)}}, two(nil), false},
		{"another QEMU", icount, prev, two(map[string]string{wire.KeyQEMU: "8.2.2"}), false},
		{"another CPU model", icount, prev, two(map[string]string{wire.KeyCPUModel: "max"}), false},
		{"another lpmbisect", icount, prev, two(map[string]string{wire.KeyVersion: "v0.0.1"}), false},
		{"other params", icount, prev, two(map[string]string{wire.KeyParams: "icount-0123456789ab"}), false},
		{"boots from before params were recorded", icount, prev, two(map[string]string{wire.KeyParams: ""}), false},
	} {
		r := &seriesRun{setup: c.setup, cfg: config.File{Measure: config.Measure{Boots: 2}}}
		got := r.standingReference(c.prev, c.boots, ref)
		if stand := got != nil; stand != c.stand || stand && len(got) != 2 {
			t.Errorf("%s: %d boots stand; want %v (2)", c.name, len(got), c.stand)
		}
	}
}

func paramsKey(t *testing.T, s *bisect.Bisector) string {
	t.Helper()
	k, err := s.Measure.ParamsKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
