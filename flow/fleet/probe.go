package fleet

import (
	"context"
	"errors"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// probe says which accelerators work on this host, and why the others do
// not, by the rules every run of lpmbisect decides by: QEMU must implement
// the accelerator (vmrunner.QEMUOffers); icount needs TCG and the CPU
// model icount boots emulate; KVM must run real kernels, which the
// verdict kept for this host says, or else a probe boot of kvmKernel
// (vmrunner.CheckKVM, the probe and the cache of every run), and without
// a device that opens nothing boots.
type probe struct {
	qemu, kvmKernel, device, cacheDir string
}

// run returns, for each accelerator wanted, why it does not work here
// (nil when it does), and what was found of KVM when it was wanted.
func (p probe) run(ctx context.Context, want map[wire.Accel]bool) (map[wire.Accel]error, *vmrunner.KVMStatus) {
	out := map[wire.Accel]error{}
	offers, err := vmrunner.ReadQEMUOffers(ctx, p.qemu)
	if err != nil {
		for a := range want {
			out[a] = err
		}
		return out, nil
	}
	var kvm *vmrunner.KVMStatus
	if want[wire.AccelTCG] {
		out[wire.AccelTCG] = offers.TCG()
	}
	if want[wire.AccelIcount] {
		out[wire.AccelIcount] = offers.Icount()
	}
	if want[wire.AccelKVM] {
		out[wire.AccelKVM] = offers.KVM()
		if out[wire.AccelKVM] == nil {
			kvm, out[wire.AccelKVM] = p.kvm(ctx)
		}
	}
	return out, kvm
}

// kvm finds whether KVM runs guests here, and why not.
func (p probe) kvm(ctx context.Context) (*vmrunner.KVMStatus, error) {
	st, err := vmrunner.CheckKVM(ctx, vmrunner.KVMCheck{QEMU: p.qemu, Device: p.device, CacheDir: p.cacheDir, Kernels: p.kernels})
	switch {
	case err != nil:
		return nil, err
	case st.Works:
		return st, nil
	case st.Source() != "":
		return st, errors.New(st.Why + " (" + st.Source() + ")")
	}
	return st, errors.New(st.Why)
}

// kernels is the probe kernel, when the worker was given one.
func (p probe) kernels() ([]vmrunner.ProbeKernel, error) {
	if p.kvmKernel == "" {
		return nil, nil
	}
	return measure.ProbeKernels(p.cacheDir, p.kvmKernel)()
}
