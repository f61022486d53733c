// Package testqemu writes fake QEMU binaries, shell scripts, for the tests
// of what lpmbisect does with a KVM that opens and then cannot run a
// guest: the probe that decides a run's accelerator, its kept verdict, a
// boot of a run that KVM fails, a fleet worker's queues. The case is then
// tested on every machine, with or without a /dev/kvm.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testqemu

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EmulationFailure is the start of what QEMU 7.2 printed on its standard
// error under kvm-pvm a second into booting Debian's 6.12 (a BMI2
// instruction of the decompressor that KVM could not emulate); QEMU then
// keeps running with the VM stopped.
const EmulationFailure = `KVM internal error. Suberror: 1
extra data[0]: 0x0000000000000001
extra data[1]: 0x894cc0f76942c40f
emulation failure
RAX=0000000001ad29a0 RBX=0000000004782b64 RCX=0000000000000000 RDX=0000000000000005
RIP=00000000047415e9 RFL=00000097 [--S-APC] CPL=0 II=0 A20=1 SMM=0 HLT=0
`

// What a fake QEMU does with a kernel.
const (
	// Broken: the decompressor's output on the console, then
	// EmulationFailure on QEMU's standard error, then it runs on with
	// the VM stopped (Debian's 6.12 under kvm-pvm).
	Broken = "broken"
	// Slow: the decompressor's output and nothing more for an hour
	// (Debian's 6.1 under kvm-pvm took 97 s to its banner).
	Slow = "slow"
	// Works: the kernel's banner, then it runs on.
	Works = "works"
	// refused: QEMU cannot open KVM and exits 1.
	refused = "refused"
)

// QEMU is a fake qemu-system-x86_64.
type QEMU struct {
	Path string // the script
	log  string // a line per boot: its pid and arguments
}

// New writes a fake QEMU that answers --version as QEMU 7.2.22 and boots
// a kernel as the kernel file says when it holds one of Broken, Slow,
// Works or Refused, and otherwise as probe says for a boot without an
// initramfs (the KVM probe's) and as run says for a boot with one (a
// run's). Each boot goes to its log (Boots).
func New(t testing.TB, probe, run string) *QEMU {
	t.Helper()
	dir := t.TempDir()
	q := &QEMU{Path: filepath.Join(dir, "qemu-system-x86_64"), log: filepath.Join(dir, "boots.log")}
	script := `#!/bin/sh
case "$*" in
--version) echo "QEMU emulator version 7.2.22 (fake)"; exit 0;;
"-accel help") printf 'Accelerators supported in QEMU binary:\ntcg\nkvm\n'; exit 0;;
"-cpu help") echo "x86 Westmere-v1           Westmere E56xx/L56xx/X56xx (Nehalem-C)"; exit 0;;
esac
echo "$$ $*" >> '` + q.log + `'
kernel= how=` + probe + `
while [ $# -gt 0 ]; do
	case "$1" in
	-kernel) kernel=$2;;
	-initrd) how=` + run + `;;
	esac
	shift
done
word=$(head -c 16 "$kernel" 2>/dev/null | tr -d '\0')
case "$word" in
` + Broken + `|` + Slow + `|` + Works + `|` + refused + `) how=$word;;
esac
case "$how" in
` + Broken + `)
	printf 'Probing EDD (edd=off to disable)... ok\r\n' >&3
	printf '%s' '` + EmulationFailure + `' >&2
	exec sleep 3600;;
` + Slow + `)
	printf 'Probing EDD (edd=off to disable)... ok\r\n' >&3
	exec sleep 3600;;
` + Works + `)
	printf '[    0.000000] Linux version 6.12.0-fake (fake@build) #1 SMP\r\n' >&3
	exec sleep 3600;;
` + refused + `)
	echo "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Permission denied" >&2
	exit 1;;
esac
echo "fake qemu: no behaviour for $kernel" >&2
exit 1
`
	if err := os.WriteFile(q.Path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return q
}

// Kernel writes a kernel that the fake QEMU boots as how says: the start
// of an x86 bzImage, enough for kernel.Resolve, whose release is
// how+"-fake" and whose boot sector begins with how.
func Kernel(t testing.TB, how string) string {
	t.Helper()
	b := make([]byte, 0x400)
	copy(b, how)
	b[0x1F1] = 1 // setup_sects
	b[0x1FE], b[0x1FF] = 0x55, 0xAA
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020F) // boot protocol 2.15
	binary.LittleEndian.PutUint16(b[0x20E:], 0x100)  // kernel_version, at 0x300
	copy(b[0x300:], how+"-fake (fake@build) #1 SMP\x00")
	path := filepath.Join(t.TempDir(), "bzImage-"+how)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Boots are the boots the fake QEMU started (not its --version), a line
// each: its pid and arguments.
func (q *QEMU) Boots(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(q.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// CheckGone fails the test for a boot of the fake QEMU still running (and
// kills it).
func (q *QEMU) CheckGone(t testing.TB) {
	t.Helper()
	for _, line := range q.Boots(t) {
		pid, err := strconv.Atoi(strings.Fields(line)[0])
		if err != nil {
			t.Fatalf("fake QEMU log line %q: %v", line, err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("fake QEMU pid %d still running (kill 0: %v); want every QEMU ended", pid, err)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Device writes a file that opens as /dev/kvm does, for a host with KVM.
func Device(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kvm")
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// NoDevice is a path where no KVM device is, for a host without KVM.
func NoDevice(t testing.TB) string {
	return filepath.Join(t.TempDir(), "kvm")
}
