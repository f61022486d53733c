package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// RingbufMapName and RingbufProgName name the objects of RingbufProducer's
// spec.
const (
	RingbufMapName  = "bench_ringbuf"
	RingbufProgName = "rb_producer"
)

// RingbufOverwrite is BPF_F_RB_OVERWRITE (1 << 19): when the ring is full
// the oldest records are overwritten instead of new ones failing. It has no
// name in x/sys/unix yet. Requires Linux 6.19.
const RingbufOverwrite = 1 << 19

// RingbufRecordSize is the payload of each record (a u64); the kernel adds
// an 8-byte header.
const RingbufRecordSize = 8

// RingbufAPI is how the producer writes records.
type RingbufAPI int

const (
	// Reserve uses bpf_ringbuf_reserve and bpf_ringbuf_submit (5.8).
	Reserve RingbufAPI = iota
	// Output uses bpf_ringbuf_output, which copies from the stack (5.8).
	Output
)

// String returns the name used in benchmark names.
func (a RingbufAPI) String() string {
	if a == Output {
		return "output"
	}
	return "reserve"
}

// RingbufProducer describes an XDP program that writes Batch records per
// run to a ring buffer, timed in the kernel like LPMBench.
type RingbufProducer struct {
	API   RingbufAPI
	Batch int // records per run, 1 to 256
	// Size is the ring buffer size in bytes: a power of two, a multiple of
	// the page size.
	Size uint32
	// Overwrite sets RingbufOverwrite on the map (Linux 6.19).
	Overwrite bool
	// NoWakeup submits with BPF_RB_NO_WAKEUP (no consumer to wake).
	NoWakeup bool
}

// Spec returns the collection: the ring buffer RingbufMapName, the stats
// map and the XDP program RingbufProgName. Each run reads the clock,
// writes Batch records (the record number), reads the clock again and adds
// the elapsed time, Batch iterations and one run to the stats; each record
// that could not be written (the ring was full) adds one to
// stats.failures. It returns RetDone.
//
// Requires Linux 5.8 (BPF ring buffer).
func (r RingbufProducer) Spec() (*ebpf.CollectionSpec, error) {
	if r.Batch < 1 || r.Batch > 256 {
		return nil, fmt.Errorf("ring buffer producer: batch %d out of range [1, 256]", r.Batch)
	}
	if r.Size == 0 || r.Size&(r.Size-1) != 0 {
		return nil, fmt.Errorf("ring buffer producer: size %d is not a power of two", r.Size)
	}
	var flags int32
	if r.NoWakeup {
		flags = 1 // BPF_RB_NO_WAKEUP
	}
	insns := asm.Instructions{
		asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
	}
	for i := range r.Batch {
		dropped, next := fmt.Sprintf("dropped_%d", i), fmt.Sprintf("next_%d", i)
		switch r.API {
		case Reserve:
			insns = append(insns,
				asm.LoadMapPtr(asm.R1, 0).WithReference(RingbufMapName),
				asm.Mov.Imm(asm.R2, RingbufRecordSize),
				asm.Mov.Imm(asm.R3, 0),
				asm.FnRingbufReserve.Call(),
				asm.JEq.Imm(asm.R0, 0, dropped),
				asm.Mov.Imm(asm.R1, int32(i)),
				asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
				asm.Mov.Reg(asm.R1, asm.R0),
				asm.Mov.Imm(asm.R2, flags),
				asm.FnRingbufSubmit.Call(),
				asm.Ja.Label(next),
			)
		case Output:
			insns = append(insns,
				asm.Mov.Imm(asm.R1, int32(i)),
				asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
				asm.LoadMapPtr(asm.R1, 0).WithReference(RingbufMapName),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -8),
				asm.Mov.Imm(asm.R3, RingbufRecordSize),
				asm.Mov.Imm(asm.R4, flags),
				asm.FnRingbufOutput.Call(),
				asm.JEq.Imm(asm.R0, 0, next),
			)
		}
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 1).WithSymbol(dropped),
			atomicAdd(asm.R7, offFailures, asm.R1),
			asm.Mov.Imm(asm.R0, 0).WithSymbol(next),
		)
	}
	insns = append(insns, stopClock()...)
	insns = append(insns,
		asm.Mov.Imm(asm.R1, int32(r.Batch)),
		atomicAdd(asm.R7, offIterations, asm.R1),
		asm.Mov.Imm(asm.R0, RetDone),
		asm.Return(),
	)
	var mapFlags uint32
	if r.Overwrite {
		mapFlags = RingbufOverwrite
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			StatsMapName:   statsSpec(),
			RingbufMapName: {Name: RingbufMapName, Type: ebpf.RingBuf, MaxEntries: r.Size, Flags: mapFlags},
		},
		Programs: map[string]*ebpf.ProgramSpec{RingbufProgName: {Name: RingbufProgName, Type: ebpf.XDP, License: "Dual MIT/GPL", Instructions: insns}},
	}, nil
}
