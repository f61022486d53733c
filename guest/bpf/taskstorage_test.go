package bpf

import (
	"errors"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// TestTaskStorageBenchInKernel runs the raw tracepoint programs where the
// host allows them (the VM tests run both drivers).
func TestTaskStorageBenchInKernel(t *testing.T) {
	skipWithoutBPF(t)
	if err := features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnTaskStorageGet); err != nil {
		t.Skipf("no task storage from raw tracepoints here: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, op := range []StorageOp{StorageBaseline, StorageGet, StorageCreateDelete} {
		t.Run(op.String(), func(t *testing.T) {
			s := TaskStorageBench{Op: op, Loops: 1000}
			spec, err := s.Spec()
			if err != nil {
				t.Fatal(err)
			}
			coll, err := ebpf.NewCollection(spec)
			var verr *ebpf.VerifierError
			if errors.As(err, &verr) {
				t.Fatalf("NewCollection() = %+v", verr)
			} else if err != nil {
				t.Fatalf("NewCollection() = %v", err)
			}
			defer coll.Close()
			for range 3 {
				ret, err := coll.Programs[s.ProgName()].Run(&ebpf.RunOptions{})
				if err != nil || ret != 0 {
					t.Fatalf("Run() = %d, %v; want 0, nil", ret, err)
				}
			}
			var st Stats
			coll.Maps[StatsMapName].Lookup(uint32(0), &st)
			if err := st.Check(); err != nil || st.Iterations != 3000 || st.Runs != 3 {
				t.Errorf("after 3 runs: %+v, Check() = %v; want 3000 iterations in 3 runs", st, err)
			}
		})
	}
}
