package vmrunner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestCPUProfilesBoot boots Debian 6.1 and 6.12 under icount on the default
// model and on every profile, with the smallest plan (the noop control),
// and checks that QEMU emulates each model without a "TCG doesn't support
// requested feature" warning, that the results record the profile's model,
// and that the kernels report the mitigations the profile's table says
// (CPUProfile.KernelMitigations), every other vulnerability "Not
// affected": the table the list command shows is what boots measure.
func TestCPUProfilesBoot(t *testing.T) {
	testkernels.SkipShort(t)
	kernels := []string{testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)}
	guest, cache := testguest.Path(t), testkernels.Cache(t)
	for _, p := range append([]vmrunner.CPUProfile{{}}, vmrunner.CPUProfiles...) {
		t.Run(p.Label(), func(t *testing.T) {
			setup, err := measure.NewSetup(measure.Options{
				Accel: wire.AccelIcount, CPUProfile: p.Name, Guest: guest, CacheDir: cache, RunDir: t.TempDir(),
				Plan:        measure.GuestPlan{Bench: "LPMTrie/op=noop", Samples: 1, Rounds: 1, Entries: 100},
				BootTimeout: 3 * time.Minute, ProgressTimeout: 3 * time.Minute,
			})
			if err != nil {
				t.Fatalf("NewSetup: %v", err)
			}
			r, err := setup.Start(kernels, measure.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Measure(context.Background(), 1); err != nil {
				t.Fatalf("boot: %v", err)
			}
			for _, n := range r.Summary().Notes {
				if n.Key == "qemu" {
					t.Errorf("QEMU warned: %s", n.Text)
				}
			}
			for i, side := range r.Sides {
				res := r.Boots(side.Name)[0][0]
				if got, want := res.GetConfig(wire.KeyCPUModel), p.QEMUModel(wire.AccelIcount); got != want {
					t.Errorf("%s: cpu-model %q; want %q", side.Label, got, want)
				}
				got := map[string]string{}
				for _, v := range wire.ParseVulnerabilities(res.GetConfig(wire.KeyVulnerabilities)) {
					got[v.Name] = v.Text
				}
				if len(got) < 10 {
					t.Fatalf("%s: vulnerabilities %q; want the kernel's lines", side.Label, res.GetConfig(wire.KeyVulnerabilities))
				}
				want := map[string]string{}
				for _, m := range p.KernelMitigations() {
					want[m.Name] = []string{m.TCG61, m.TCG612}[i]
				}
				for name, text := range got {
					w, ok := want[name]
					if !ok {
						w = "Not affected"
					}
					if text != w {
						t.Errorf("%s on %s: %s = %q; the profile's table says %q", side.Label, p.Label(), name, text, w)
					}
				}
				for name := range want {
					if _, ok := got[name]; !ok {
						t.Errorf("%s on %s: no %s line; the profile's table has one", side.Label, p.Label(), name)
					}
				}
				if thunk := wire.ReturnThunk(wire.ParseVulnerabilities(res.GetConfig(wire.KeyVulnerabilities))); thunk == "" || strings.Contains(thunk, "|") {
					t.Errorf("%s on %s: return thunk %q", side.Label, p.Label(), thunk)
				}
			}
		})
	}
}
