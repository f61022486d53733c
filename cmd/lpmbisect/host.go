package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/serve"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/wire"
)

func hostCommand(r *invocation) *cli.Command {
	var reprobe bool
	opts := append(cliflag.Keys(r.File, "measure.qemu", "measure.cache_dir", "measure.memory_plugin"), configOpt(r),
		opt{Name: "reprobe", Ptr: &reprobe, Usage: "probe KVM again with the KERNELs given, whatever verdict is kept for this host"},
		opt{Name: "format", Ptr: &r.format, Usage: "on stdout: text or json"})
	return command("host", "what this host offers: KVM (working or not, and why), icount, TCG, what --accel auto chooses, the memory plugin, the browser of the served pages' test", "[KERNEL...]", opts,
		func(c *cli.Context) error { return runHost(c, r, reprobe) })
}

// runHost says what this host offers; it probes KVM with the kernels given
// when no verdict is kept (or --reprobe). Exit 4 when QEMU cannot boot
// anything here.
func runHost(c *cli.Context, r *invocation, reprobe bool) error {
	format, err := report.ParseFormat(r.format)
	if err != nil || format != report.FormatText && format != report.FormatJSON {
		return usageError("--format %q: use text or json", r.format)
	}
	kernels := c.Args().Slice()
	if reprobe && len(kernels) == 0 {
		return usageError("--reprobe needs a KERNEL to probe KVM with (e.g. a compare's kernel A)")
	}
	cacheDir := r.Measure.CacheDir
	if cacheDir == "" {
		if cacheDir, err = measure.DefaultCacheDir(); err != nil {
			return usageError("--cache-dir: %v", err)
		}
	}
	h, err := hostView(c.Context, hostQuery{qemu: r.Measure.QEMU, cacheDir: cacheDir, memoryPlugin: r.Measure.MemoryPlugin, kernels: kernels, reprobe: reprobe})
	if err != nil {
		return err
	}
	if err := report.WriteHost(c.App.Writer, format, h); err != nil {
		return err
	}
	switch {
	case h.QEMUProblem != "":
		return errors.New("host: " + h.QEMUProblem) // exit 4
	case h.Auto == "":
		return errors.New("host: neither KVM nor icount can boot here")
	}
	return nil
}

// hostQuery is what lpmbisect host is asked: the QEMU binary (default
// vmrunner.DefaultQEMU), the cache directory, a memory plugin named, the
// kernels to probe KVM with, whether to probe again, and the KVM device
// (default vmrunner.defaultKVMDevice; tests name another).
type hostQuery struct {
	qemu, cacheDir, memoryPlugin, device string
	kernels                              []string
	reprobe                              bool
}

// hostView finds what this host offers: QEMU's accelerators, KVM's
// verdict (vmrunner.ChooseAccel: kept, or probed with the kernels), what
// auto chooses, the memory plugin and the browser. Its error is the
// probe kernels' own or the probe's.
func hostView(ctx context.Context, q hostQuery) (view.Host, error) {
	if q.qemu == "" {
		q.qemu = vmrunner.DefaultQEMU
	}
	h := view.Host{QEMU: q.qemu, BrowserLooked: serve.BrowserNames, Browser: serve.FindBrowser()}
	h.MemoryPlugin, h.MemoryPluginLooked = vmrunner.FindMemoryPlugin(q.cacheDir)
	if p := q.memoryPlugin; p != "" {
		h.MemoryPlugin, h.MemoryPluginLooked = "", []string{p}
		if _, err := os.Stat(p); err == nil {
			h.MemoryPlugin = p
		}
	}
	offers, err := vmrunner.ReadQEMUOffers(ctx, q.qemu)
	if err != nil {
		h.QEMUProblem = err.Error()
		for _, a := range []wire.Accel{wire.AccelKVM, wire.AccelIcount, wire.AccelTCG} {
			h.Accels = append(h.Accels, view.HostAccel{Name: string(a), Why: "no QEMU to boot under it"})
		}
		return h, nil
	}
	h.QEMUVersion = offers.Version
	kvm := view.HostAccel{Name: string(wire.AccelKVM)}
	auto := wire.AccelIcount
	if err := offers.KVM(); err != nil {
		kvm.Why = err.Error()
	} else {
		choice, err := vmrunner.ChooseAccel(ctx, wire.AccelAuto, vmrunner.KVMCheck{QEMU: q.qemu, Device: q.device, CacheDir: q.cacheDir,
			Kernels: measure.ProbeKernels(q.cacheDir, q.kernels...), Reprobe: q.reprobe})
		if err != nil {
			return h, err
		}
		st := choice.KVM
		auto, kvm.Works, kvm.Why, kvm.Source = choice.Accel, st.Works, st.Why, st.Source()
		if st.Verdict != nil {
			h.KVMProbe, h.KVMVerdictAt, h.KVMCached = st.Verdict.Boots, st.Verdict.At, st.Cached
			h.KVMVerdictFile = st.CacheFile
		}
		if st.Opens && st.Verdict == nil {
			kvm.Source = "lpmbisect host KERNEL probes it once for this host (a compare's or run's kernels do too)"
		}
	}
	icount := view.HostAccel{Name: string(wire.AccelIcount), Works: offers.Icount() == nil,
		Why: fmt.Sprintf("TCG counting instructions on the CPU model %s: insn/op, deterministic", vmrunner.IcountCPUModel)}
	if err := offers.Icount(); err != nil {
		icount.Why = err.Error()
	}
	tcg := view.HostAccel{Name: string(wire.AccelTCG), Works: offers.TCG() == nil, Why: "TCG in wall time: ns/op of the emulator, noisy (only when asked for)"}
	if err := offers.TCG(); err != nil {
		tcg.Why = err.Error()
	}
	h.Accels = []view.HostAccel{kvm, icount, tcg}
	if auto == wire.AccelKVM && kvm.Works || auto == wire.AccelIcount && icount.Works {
		h.Auto = string(auto)
	}
	return h, nil
}
