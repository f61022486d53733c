package fleet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// probeTimeout bounds one QEMU query (-accel help, -cpu help).
const probeTimeout = 20 * time.Second

// probe says which accelerators work on this host, and why the others do
// not: QEMU must run and implement the accelerator; icount needs TCG and
// the CPU model icount boots emulate; KVM must run a guest, which only a
// boot shows (nested virtualization may open /dev/kvm and then hang the
// guest forever), so it is probed with a real boot of kvmKernel under the
// Selector's KVM rules, and not at all without one.
type probe struct {
	qemu, kvmKernel, guest, cacheDir string
}

func (p probe) run(ctx context.Context, want map[wire.Accel]bool) map[wire.Accel]error {
	out := map[wire.Accel]error{}
	if _, err := vmrunner.QEMUVersion(p.qemu); err != nil {
		for a := range want {
			out[a] = err
		}
		return out
	}
	accels, err := qemuList(ctx, p.qemu, "-accel", "help")
	if err != nil {
		for a := range want {
			out[a] = err
		}
		return out
	}
	if want[wire.AccelTCG] || want[wire.AccelIcount] {
		var tcg error
		if !accels["tcg"] {
			tcg = fmt.Errorf("%s does not implement TCG (-accel help lists %s)", p.qemu, keys(accels))
		}
		if want[wire.AccelTCG] {
			out[wire.AccelTCG] = tcg
		}
		if want[wire.AccelIcount] {
			out[wire.AccelIcount] = tcg
			if tcg == nil {
				cpus, err := qemuList(ctx, p.qemu, "-cpu", "help")
				switch {
				case err != nil:
					out[wire.AccelIcount] = err
				case !cpus[vmrunner.IcountCPUModel]: // the model; the features it takes off need no check
					out[wire.AccelIcount] = fmt.Errorf("%s has no CPU model %s, which icount boots emulate", p.qemu, vmrunner.IcountCPUModel)
				}
			}
		}
	}
	if want[wire.AccelKVM] {
		out[wire.AccelKVM] = p.kvm(ctx, accels["kvm"])
	}
	return out
}

func (p probe) kvm(ctx context.Context, listed bool) error {
	if !listed {
		return fmt.Errorf("%s does not implement KVM", p.qemu)
	}
	if p.kvmKernel == "" {
		return errors.New("not probed: no kernel to probe KVM with was given (KVM that opens may still hang guests)")
	}
	img, err := initramfs.Build(initramfs.Spec{Guest: p.guest}, p.cacheDir)
	if err != nil {
		return fmt.Errorf("probe KVM: %w", err)
	}
	dir, err := os.MkdirTemp(p.cacheDir, "kvm-probe-")
	if err != nil {
		return fmt.Errorf("probe KVM: %w", err)
	}
	defer os.RemoveAll(dir)
	// A kernel that prints its banner under KVM within the probe
	// deadline works; the boot is cut short after that.
	ctx, cancel := context.WithTimeout(ctx, vmrunner.KVMProbeDeadline+10*time.Second)
	defer cancel()
	sel := &vmrunner.Selector{Requested: wire.AccelKVM}
	_, err = sel.Boot(ctx, vmrunner.Config{QEMU: p.qemu, Kernel: p.kvmKernel, Initramfs: img.Path,
		RunDir: filepath.Join(dir, "boot"), BootDeadline: 2 * vmrunner.KVMProbeDeadline})
	return err
}

// qemuList runs qemu with a help option and returns the first word of
// each listed line ("tcg", "kvm"; "Westmere-v1" from "x86 Westmere-v1 …").
func qemuList(ctx context.Context, qemu string, args ...string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", qemu, strings.Join(args, " "), err)
	}
	if out.Len() > 1<<20 {
		return nil, fmt.Errorf("%s %s: more than 1 MiB of output", qemu, strings.Join(args, " "))
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "x86":
			names[f[1]] = true
		case len(f) >= 1:
			names[f[0]] = true
		}
	}
	return names, nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		if !strings.HasSuffix(k, ":") {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}
