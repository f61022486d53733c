package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
)

// TestHostView: what lpmbisect host says of KVM, under fake QEMUs on fake
// devices, so each case is seen on every machine: unprobed without a
// kernel, probed with one and kept, the kept verdict read without a boot,
// probed again when asked, nothing booted without a device; auto follows.
func TestHostView(t *testing.T) {
	ctx := context.Background()
	broken, works := testqemu.New(t, testqemu.Broken, testqemu.Broken), testqemu.New(t, testqemu.Works, testqemu.Works)
	cache, device := t.TempDir(), testqemu.Device(t)
	kernel := testqemu.Kernel(t, testqemu.Broken)
	kvmOf := func(h view.Host) view.HostAccel { return h.Accels[0] }
	for _, c := range []struct {
		name     string
		q        hostQuery
		works    bool
		why      string
		auto     string
		probe    int  // boots of the probe shown
		cached   bool // the verdict was kept before
		qemuRuns int  // boots of the broken QEMU in all
	}{
		{"no kernel, nothing kept", hostQuery{qemu: broken.Path, cacheDir: cache, device: device}, false, "KVM was not probed: no kernel to probe it with", "icount", 0, false, 0},
		{"probed", hostQuery{qemu: broken.Path, cacheDir: cache, device: device, kernels: []string{kernel}}, false,
			`KVM does not run guests here: QEMU reported "KVM internal error. Suberror: 1; emulation failure"`, "icount", 1, false, 1},
		{"kept", hostQuery{qemu: broken.Path, cacheDir: cache, device: device}, false, "emulation failure", "icount", 1, true, 1},
		{"reprobed", hostQuery{qemu: broken.Path, cacheDir: cache, device: device, kernels: []string{kernel}, reprobe: true}, false, "emulation failure", "icount", 1, false, 2},
		{"no device", hostQuery{qemu: broken.Path, cacheDir: cache, device: testqemu.NoDevice(t)}, false, "no usable ", "icount", 0, false, 2},
		{"working KVM", hostQuery{qemu: works.Path, cacheDir: cache, device: device, kernels: []string{testqemu.Kernel(t, testqemu.Works)}}, true,
			"works-fake printed its banner under KVM", "kvm", 1, false, 2},
	} {
		h, err := hostView(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: hostView = %v", c.name, err)
		}
		k := kvmOf(h)
		if k.Name != "kvm" || k.Works != c.works || !strings.Contains(k.Why, c.why) || h.Auto != c.auto || len(h.KVMProbe) != c.probe || h.KVMCached != c.cached {
			t.Errorf("%s: kvm %+v, auto %q, %d probe boots shown, kept %v; want works %v saying %q, auto %s, %d, %v",
				c.name, k, h.Auto, len(h.KVMProbe), h.KVMCached, c.works, c.why, c.auto, c.probe, c.cached)
		}
		if n := len(broken.Boots(t)); n != c.qemuRuns {
			t.Errorf("%s: the broken QEMU booted %d times in all; want %d", c.name, n, c.qemuRuns)
		}
		if h.QEMUVersion != "7.2.22" || !h.Accels[1].Works || h.Accels[1].Name != "icount" || !h.Accels[2].Works {
			t.Errorf("%s: QEMU %q, accels %+v; want 7.2.22 with icount and tcg working", c.name, h.QEMUVersion, h.Accels)
		}
		var text, js bytes.Buffer
		if err := report.WriteHost(&text, report.FormatText, h); err != nil || !strings.Contains(text.String(), "auto           "+c.auto+"\n") {
			t.Errorf("%s: WriteHost(text) = %v:\n%s", c.name, err, text.String())
		}
		var back view.Host
		if err := report.WriteHost(&js, report.FormatJSON, h); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.Auto != h.Auto {
			t.Errorf("%s: WriteHost(json) = %v:\n%s", c.name, err, js.String())
		}
		if c.name == "probed" {
			if b := h.KVMProbe[0]; b.Event != vmrunner.ProbeReport || b.Ended < b.At {
				t.Errorf("probe boot %+v; want ended by QEMU's report", b)
			}
			t.Logf("lpmbisect host, after a probe:\n%s", text.String())
		}
	}
	broken.CheckGone(t)
	works.CheckGone(t)
}

// TestHostCommand: the command's usage errors, a QEMU that is missing
// (said, exit 4), and a memory plugin named but missing.
func TestHostCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"host", "--reprobe"}, exitUsage, "--reprobe needs a KERNEL"},
		{[]string{"host", "--format", "html"}, exitUsage, `--format "html": use text or json`},
		{[]string{"host", "--qemu", filepath.Join(t.TempDir(), "no-qemu"), "--cache-dir", t.TempDir()}, exitInfra, "not found"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("lpmbisect %s: exit %d; want %d saying %q\n%s%s", strings.Join(c.args, " "), code, c.code, c.want, stdout, stderr)
		}
	}
	missing := filepath.Join(t.TempDir(), "memcount.so")
	h, err := hostView(context.Background(), hostQuery{qemu: testqemu.New(t, testqemu.Works, testqemu.Works).Path, cacheDir: t.TempDir(),
		memoryPlugin: missing, device: testqemu.NoDevice(t)})
	var text bytes.Buffer
	report.WriteHost(&text, report.FormatText, h)
	if err != nil || h.MemoryPlugin != "" || !strings.Contains(text.String(), "memory plugin  not found: looked in "+missing+"; scripts/setup builds it") {
		t.Errorf("hostView(memory plugin %s missing) = %v:\n%s", missing, err, text.String())
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the missing plugin exists")
	}
}
