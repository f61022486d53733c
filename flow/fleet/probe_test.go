package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
)

// TestWorkerWorksQueuesOfWorkingAccels: a worker works a kvm queue only
// where KVM runs real kernels, by the probe and the kept verdict of every
// run (vmrunner.CheckKVM), so no kvm job goes to a host whose KVM does
// not run it; its next start takes the kept verdict and boots nothing;
// without a device that opens nothing boots at all. Fake QEMUs, shell
// scripts, play each KVM, so the case is tested on every machine.
func TestWorkerWorksQueuesOfWorkingAccels(t *testing.T) {
	queues := []string{"icount", "kvm-pvm"}
	broken, works := testqemu.New(t, testqemu.Broken, testqemu.Broken), testqemu.New(t, testqemu.Works, testqemu.Works)
	brokenDevice, brokenCache := testqemu.Device(t), t.TempDir()
	for _, c := range []struct {
		name           string
		qemu           *testqemu.QEMU
		device, kernel string
		cache          string
		kvmWorks       bool
		boots          int // probe boots in all of this QEMU
		why            string
	}{
		{"no /dev/kvm", broken, testqemu.NoDevice(t), testqemu.Kernel(t, testqemu.Broken), t.TempDir(), false, 0, "kvm does not work here: no usable "},
		{"broken KVM", broken, brokenDevice, testqemu.Kernel(t, testqemu.Broken), brokenCache, false, 1,
			`KVM does not run guests here: QEMU reported "KVM internal error. Suberror: 1; emulation failure"`},
		// The worker's next start: the same QEMU, device and cache.
		{"broken KVM, kept", broken, brokenDevice, "", brokenCache, false, 1, "kept from the probe of"},
		{"working KVM", works, testqemu.Device(t), testqemu.Kernel(t, testqemu.Works), t.TempDir(), true, 1, ""},
		{"no probe kernel", works, testqemu.Device(t), "", t.TempDir(), false, 1, "KVM was not probed: no kernel to probe it with"},
	} {
		t.Run(c.name, func(t *testing.T) {
			qemu := c.qemu
			wlog, wlogs := testLogger(t, "worker")
			rw := &runningWorker{Worker: &Worker{Queues: queues, QEMU: qemu.Path, KVMDevice: c.device, KVMProbeKernel: c.kernel, CacheDir: c.cache, Log: wlog},
				queues: map[string]Queue{}}
			if err := rw.pickQueues(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, kvmQueue := rw.queues["kvm-pvm"]
			if _, icount := rw.queues["icount"]; !icount || kvmQueue != c.kvmWorks || slices.Contains(rw.host.Accels, "kvm") != c.kvmWorks {
				t.Errorf("worker queues %v, accels %v; want icount, and kvm-pvm only if KVM works (%v)", rw.host.Queues, rw.host.Accels, c.kvmWorks)
			}
			if !c.kvmWorks && (len(rw.host.Dropped) != 1 || !strings.Contains(rw.host.Dropped[0], c.why)) {
				t.Errorf("worker dropped %q; want kvm-pvm, saying %q", rw.host.Dropped, c.why)
			}
			if n := len(qemu.Boots(t)); n != c.boots {
				t.Errorf("%d probe boots; want %d", n, c.boots)
			}
			t.Logf("%s", strings.TrimSpace(wlogs.String()))
			qemu.CheckGone(t)
		})
	}
}
