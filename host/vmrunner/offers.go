package vmrunner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// qemuListTimeout bounds one QEMU query (-accel help, -cpu help).
const qemuListTimeout = 20 * time.Second

// QEMUOffers is what a QEMU binary implements of what lpmbisect boots
// under: its accelerators (-accel help) and x86 CPU models (-cpu help).
type QEMUOffers struct {
	QEMU    string // the binary asked
	Version string
	Accels  []string // "kvm", "tcg"
	CPUs    []string // "Westmere-v1", …
}

// ReadQEMUOffers asks qemu (a path, or a name in PATH) what it offers.
func ReadQEMUOffers(ctx context.Context, qemu string) (*QEMUOffers, error) {
	if qemu == "" {
		qemu = DefaultQEMU
	}
	version, err := QEMUVersion(qemu)
	if err != nil {
		return nil, err
	}
	o := &QEMUOffers{QEMU: qemu, Version: version}
	if o.Accels, err = qemuList(ctx, qemu, "-accel", "help"); err != nil {
		return nil, err
	}
	if o.CPUs, err = qemuList(ctx, qemu, "-cpu", "help"); err != nil {
		return nil, err
	}
	return o, nil
}

// TCG says why TCG boots cannot run (nil when they can).
func (o *QEMUOffers) TCG() error {
	if !slices.Contains(o.Accels, "tcg") {
		return fmt.Errorf("%s does not implement TCG (-accel help lists %s)", o.QEMU, strings.Join(o.Accels, ", "))
	}
	return nil
}

// Icount says why icount boots cannot run (nil when they can): they need
// TCG and the CPU model they emulate (IcountCPUModel; the features it
// takes off need no check).
func (o *QEMUOffers) Icount() error {
	if err := o.TCG(); err != nil {
		return err
	}
	if !slices.Contains(o.CPUs, IcountCPUModel) {
		return fmt.Errorf("%s has no CPU model %s, which icount boots emulate", o.QEMU, IcountCPUModel)
	}
	return nil
}

// KVM says why QEMU cannot boot under KVM at all (nil when it implements
// it: whether KVM runs guests here is CheckKVM's to say).
func (o *QEMUOffers) KVM() error {
	if !slices.Contains(o.Accels, "kvm") {
		return fmt.Errorf("%s does not implement KVM (-accel help lists %s)", o.QEMU, strings.Join(o.Accels, ", "))
	}
	return nil
}

// qemuList runs qemu with a help option and returns the first word of
// each listed line ("tcg", "kvm"; "Westmere-v1" from "x86 Westmere-v1 …"),
// headings ("Accelerators supported in QEMU binary:") left out.
func qemuList(ctx context.Context, qemu string, args ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, qemuListTimeout)
	defer cancel()
	out := boundedBuffer{max: 1 << 20}
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", qemu, strings.Join(args, " "), err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var name string
		switch {
		case len(f) >= 2 && f[0] == "x86":
			name = f[1]
		case len(f) >= 1:
			name = f[0]
		}
		if name != "" && !strings.HasSuffix(sc.Text(), ":") && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}
