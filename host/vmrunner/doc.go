// Package vmrunner boots a kernel and initramfs under QEMU and brings back
// what the guest sends on its results channel, with an outcome that says
// whether the boot delivered everything.
//
// QEMU's exit status proves nothing (with panic=-1 and -no-reboot it exits 0
// when the guest panics), so a boot is OK only when the stream on the results
// channel ends with a valid wire trailer. Two deadlines bound every boot: the
// boot deadline (until the first byte of results) and the progress deadline
// (the longest silence on the console and the results channels once the guest
// is up). Whatever happens, QEMU is killed before Boot returns, and the bytes
// received so far are kept, so completed samples survive a stalled guest.
//
// Results travel over a virtio-serial port named wire.PortName; a kernel
// without virtio console gets a second 8250 UART (ttyS1) instead, and the
// guest picks whichever works. The console (ttyS0) is captured to a log file
// and scanned for panics. The virtio port is a socket pair, so the host can
// answer the guest: it acknowledges the guest's flush marker
// (wire.FlushLine), after which the guest powers off knowing the host has
// read everything (QEMU drops what it still holds for a slow host when the
// guest powers off), and lets a paced guest take its steps (Config.Pace).
//
// Under Icount the numbers are instruction counts, which depend on the CPU
// the guest sees and on QEMU: Icount boots emulate a fixed CPU model
// (IcountCPUModel) rather than QEMU's "max", or a production CPU's identity
// on it (CPUProfile, Config.CPU), and every Result carries the CPU model
// and the QEMU version (QEMUVersion), so that counts are compared only
// where both agree.
//
// Every boot runs under one accelerator, decided before a run by
// ChooseAccel: KVM only where it runs real kernels, which a /dev/kvm that
// opens does not show (a nested or paravirtual KVM may stop every stock
// kernel in its decompressor). kvmProbe boots the run's kernels under KVM
// to their banner while it reads QEMU's standard error as it comes, and
// CheckKVM keeps its verdict per host kernel, QEMU binary and KVM device,
// so later runs boot nothing to decide. Under KVM, Boot reads QEMU's
// output the same way and ends a boot that KVM fails at once, with a
// KVMUnusableError: a run's boot never moves to another accelerator.
//
// Library messages go to a *log.Logger given in the Log fields (nil means
// silent) and errors name no command-line flags: KVMUnusableError and
// CommandLineTooLongError say what went wrong, the caller says which of its
// options fix it.
package vmrunner
