package bpf

import (
	"errors"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func TestMapOffsetsFromBTF(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	off, err := MapOffsetsFromBTF(spec)
	if err != nil {
		t.Fatalf("MapOffsetsFromBTF() = %v", err)
	}
	if off.Name == 0 || off.Work == 0 || off.Name == off.Work {
		t.Errorf("MapOffsetsFromBTF() = %+v; want distinct non-zero offsets for name and work", off)
	}
	t.Logf("struct bpf_map offsets: %+v", off)
}

func TestTrieFreeInKernel(t *testing.T) {
	skipWithoutBPF(t)
	if err := features.HaveProgramType(ebpf.Tracing); err != nil {
		t.Skipf("no fentry/fexit here: %v", err)
	}
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	off, err := MapOffsetsFromBTF(kspec)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := TrieFreeSpec(off)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("NewCollection() = %v", err)
	}
	defer coll.Close()
	for _, name := range []string{FreeEntryProgName, FreeExitProgName} {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name]})
		if err != nil {
			t.Fatalf("AttachTracing(%s) = %v", name, err)
		}
		defer l.Close()
	}
	// A trie with another name must not count.
	for _, name := range []string{"other_trie", FreeTrieName} {
		ts := TrieSpec(100)
		ts.Name = name
		m, err := ebpf.NewMap(ts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint32(100) {
			m.Update(KeyFor(32, i), i, ebpf.UpdateAny)
		}
		m.Close()
	}
	var s Stats
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := coll.Maps[StatsMapName].Lookup(uint32(0), &s); err != nil {
			t.Fatal(err)
		}
		if s.Iterations > 0 {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	coll.Maps[StatsMapName].Lookup(uint32(0), &s)
	if s.Iterations != 1 || s.Nanoseconds == 0 {
		t.Errorf("stats after freeing %s and another trie = %+v; want 1 timed free", FreeTrieName, s)
	}
	t.Logf("free of 100 entries: %d ns", s.Nanoseconds)
}

func TestSyscallLookupsInKernel(t *testing.T) {
	skipWithoutBPF(t)
	spec, err := SyscallLookupsSpec(8, 10, KeyFor(32, 9))
	if err != nil {
		t.Fatal(err)
	}
	coll := loadFilled(t, spec, 10, 32, 1<<31)
	l, err := link.Kprobe("__x64_sys_gettid", coll.Programs[SyscallProgName], nil)
	if err != nil {
		t.Skipf("kprobe on __x64_sys_gettid: %v", err)
	}
	defer l.Close()
	for range 100 {
		unix.Gettid()
	}
	var s Stats
	coll.Maps[StatsMapName].Lookup(uint32(0), &s)
	if s.Runs < 100 {
		t.Errorf("stats.Runs after 100 gettid() = %d; want at least 100", s.Runs)
	}
	if _, err := SyscallLookupsSpec(maxSyscallLookups+1, 1, KeyFor(32, 0)); err == nil {
		t.Errorf("SyscallLookupsSpec(%d) = nil error; want an error", maxSyscallLookups+1)
	}
}

func TestRingbufProducerInKernel(t *testing.T) {
	skipWithoutBPF(t)
	for _, api := range []RingbufAPI{Reserve, Output} {
		t.Run(api.String(), func(t *testing.T) {
			r := RingbufProducer{API: api, Batch: 50, Size: 1 << 16, NoWakeup: true}
			spec, err := r.Spec()
			if err != nil {
				t.Fatal(err)
			}
			coll := loadFilled(t, spec, 0, 32, 0)
			s, ret := runXDP(t, coll.Programs[RingbufProgName], coll.Maps[StatsMapName], 4)
			if ret != RetDone || s.Iterations != 200 || s.Failures != 0 || s.Nanoseconds == 0 {
				t.Errorf("after 4 runs: %d, %+v; want RetDone, 200 records, no failures", ret, s)
			}
			// 64 KiB hold 4096 16-byte records: 100 more runs overflow.
			s, _ = runXDP(t, coll.Programs[RingbufProgName], coll.Maps[StatsMapName], 100)
			if s.Failures == 0 {
				t.Errorf("after overflowing the ring: %+v; want failures", s)
			}
		})
	}
	_, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16, Flags: RingbufOverwrite})
	t.Logf("overwrite ring buffer on this kernel: %v (errors.Is EINVAL: %v)", err, errors.Is(err, unix.EINVAL))
}
