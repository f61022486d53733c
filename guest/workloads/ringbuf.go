package workloads

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// Requirements of the ring buffer benchmarks.
var (
	// ReqRingbuf: BPF_MAP_TYPE_RINGBUF, Linux 5.8.
	ReqRingbuf = Requirement{
		Feature:   "BPF_MAP_TYPE_RINGBUF",
		MinKernel: "5.8",
		Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.RingBuf) }),
	}
	// ReqRingbufOverwrite: BPF_F_RB_OVERWRITE, Linux 6.19 (upstream
	// feeaf1346f80). The probe creates a ring buffer with the flag instead
	// of reading the version, so a kernel with the mode backported (checked
	// on Debian's 6.12, docs/ringbuf.md) is recognised; every kernel
	// without it refuses the flag with EINVAL, which reads as unsupported.
	ReqRingbufOverwrite = Requirement{
		Feature:   "BPF_F_RB_OVERWRITE",
		MinKernel: "6.19",
		Probe: bpfProbe(func() error {
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize()), Flags: bpf.RingbufOverwrite})
			if err != nil {
				return unsupportedIf(err)
			}
			return m.Close()
		}),
	}
)

// ringbufBatch is the number of records per program run, the kernel
// bench's --rb-batch-cnt in its producer sweeps.
const ringbufBatch = 50

// ringbufRunsPerRound is the number of program runs per producer per
// round: 10 runs of ringbufBatch records make 500 records per round, 10000
// per sample by default.
const ringbufRunsPerRound = 10

// ringbufProducers are the producer counts of the sweep; those above the
// guest's vCPUs are not selected.
var ringbufProducers = []int{1, 2, 4, 8, 16, 32, 64}

// Ring buffer modes.
const (
	// modeConsumer: a user-space reader consumes records while the
	// producers run.
	modeConsumer = "consumer"
	// modeProducer: no reader; the ring is large enough for a sample and
	// is emptied between samples (by moving the consumer position).
	modeProducer = "producer"
	// modeOverwrite: no reader, BPF_F_RB_OVERWRITE (6.19): the ring is
	// filled before the first sample, so that every record measured
	// overwrites the oldest one (the kernel bench's --rb-overwrite
	// --rb-bench-producer, whose producers run until the bench ends and
	// so spend nearly all of it on a full ring).
	modeOverwrite = "overwrite"
)

// ringbufOverwriteSize is the ring of the overwrite rows: the kernel
// bench's default (--rb-size, 512 KiB). In overwrite mode the ring's size
// sets only how far back the last records reach, not whether producers
// can write, so it need not grow with the sample.
const ringbufOverwriteSize = 512 << 10

// ringbufRecordBytes is what one record takes in the ring: its payload
// and the kernel's 8-byte header, rounded up to 8 bytes.
const ringbufRecordBytes = (bpf.RingbufRecordSize + 8 + 7) &^ 7

func ringbufBenchmarks() []*Benchmark {
	var out []*Benchmark
	for _, mode := range []string{modeConsumer, modeProducer, modeOverwrite} {
		for _, api := range []bpf.RingbufAPI{bpf.Reserve, bpf.Output} {
			for _, p := range ringbufProducers {
				reqs := []Requirement{ReqRingbuf, ReqXDPTestRun}
				if mode == modeOverwrite {
					reqs = append(reqs, ReqRingbufOverwrite)
				}
				out = append(out, &Benchmark{
					Name: fmt.Sprintf("RingBuf/api=%s/mode=%s/producers=%d", api, mode, p),
					Doc: fmt.Sprintf("producers (one per vCPU, all at once) each writing %d 8-byte records per XDP test run, %d runs per round, with %s, %s; ns/op is in-kernel time per record per producer, drops/op the share of records the full ring refused",
						ringbufBatch, ringbufRunsPerRound, map[bpf.RingbufAPI]string{bpf.Reserve: "bpf_ringbuf_reserve/submit", bpf.Output: "bpf_ringbuf_output"}[api],
						map[string]string{
							modeConsumer:  "a user-space reader consuming meanwhile",
							modeProducer:  "no reader (the ring is emptied between samples)",
							modeOverwrite: "no reader, overwrite mode (BPF_F_RB_OVERWRITE) on a full 512 KiB ring, so that every record overwrites the oldest",
						}[mode]),
					Requires: reqs,
					MinCPUs:  p,
					Run:      ringbufRun(api, mode, p),
					Spec:     ringbufSpec(api, mode, p),
					Programs: []string{bpf.RingbufProgName},
				})
			}
		}
	}
	return out
}

// ringbufSize returns a power-of-two ring size that holds a sample's
// records of all producers twice over (at least 256 KiB).
func ringbufSize(records int) uint32 {
	need := uint32(2 * records * ringbufRecordBytes)
	size := uint32(256 << 10)
	for size < need && size < 1<<30 {
		size <<= 1
	}
	return size
}

// ringbufRing is the ring buffer's size of a RingBuf benchmark under p.
func ringbufRing(mode string, producers int, p Params) uint32 {
	if mode == modeOverwrite {
		return ringbufOverwriteSize
	}
	return ringbufSize(producers * p.Rounds * ringbufRunsPerRound * ringbufBatch)
}

// ringbufSpec builds the collection of a RingBuf benchmark under p.
func ringbufSpec(api bpf.RingbufAPI, mode string, producers int) func(Params) (*ebpf.CollectionSpec, error) {
	return func(p Params) (*ebpf.CollectionSpec, error) {
		return bpf.RingbufProducer{
			API:       api,
			Batch:     ringbufBatch,
			Size:      ringbufRing(mode, producers, p),
			Overwrite: mode == modeOverwrite,
			NoWakeup:  mode != modeConsumer,
		}.Spec()
	}
}

func ringbufRun(api bpf.RingbufAPI, mode string, producers int) func(*Run) error {
	return func(r *Run) error {
		rounds := r.Params.Rounds * ringbufRunsPerRound
		size := ringbufRing(mode, producers, r.Params)
		spec, err := ringbufSpec(api, mode, producers)(r.Params)
		if err != nil {
			return err
		}
		coll, err := loadCollection(r, "ring buffer producer", spec)
		if err != nil {
			return unsupportedIf(err)
		}
		defer coll.Close()
		rb, stats, prog := coll.Maps[bpf.RingbufMapName], coll.Maps[bpf.StatsMapName], coll.Programs[bpf.RingbufProgName]

		var consumed atomic.Uint64
		var drain func() error
		switch mode {
		case modeConsumer:
			rd, err := ringbuf.NewReader(rb)
			if err != nil {
				return fmt.Errorf("open ring buffer reader: %w", err)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var rec ringbuf.Record
				for rd.ReadInto(&rec) == nil {
					consumed.Add(1)
				}
			}()
			defer wg.Wait()
			defer rd.Close()
		case modeProducer:
			pos, err := mapRingPositions(rb)
			if err != nil {
				return err
			}
			defer pos.close()
			drain = pos.discardAll
		case modeOverwrite:
			pos, err := mapRingPositions(rb)
			if err != nil {
				return err
			}
			defer pos.close()
			if err := fillRing(prog, stats, pos, size); err != nil {
				return err
			}
		}

		take := func() (Sample, error) {
			if drain != nil {
				if err := drain(); err != nil {
					return Sample{}, err
				}
			}
			if err := stats.Update(uint32(0), bpf.Stats{}, ebpf.UpdateAny); err != nil {
				return Sample{}, fmt.Errorf("reset stats: %w", err)
			}
			if err := runProducers(prog, producers, rounds); err != nil {
				return Sample{}, err
			}
			var st bpf.Stats
			if err := stats.Lookup(uint32(0), &st); err != nil {
				return Sample{}, fmt.Errorf("read stats: %w", err)
			}
			if st.Iterations == 0 {
				return Sample{}, fmt.Errorf("%w: no records written", bpf.ErrBadStats)
			}
			return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds, Extra: []Metric{{float64(st.Failures) / float64(st.Iterations), "drops/op"}}}, nil
		}
		if _, err := take(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		return reportSamples(r, take)
	}
}

// runProducers runs prog rounds times on each of n threads, thread i
// pinned to CPU i, all at once.
func runProducers(prog *ebpf.Program, n, rounds int) error {
	errs := make([]error, n)
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			set.Set(i)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs[i] = fmt.Errorf("pin producer %d to CPU %d: %w", i, i, err)
			}
			ready.Done()
			<-start
			if errs[i] != nil {
				return
			}
			ret, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(rounds)})
			if err == nil && ret != bpf.RetDone {
				err = fmt.Errorf("program returned %d, want %d", ret, bpf.RetDone)
			}
			if err != nil {
				errs[i] = fmt.Errorf("producer %d: run program: %w", i, err)
			}
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return errors.Join(errs...)
}

// ringbufFillRuns is the number of program runs that write at least size
// bytes of records.
func ringbufFillRuns(size uint32) int {
	perRun := uint32(ringbufBatch * ringbufRecordBytes)
	return int((size + perRun - 1) / perRun)
}

// ErrRingNotOverwritten says that a ring buffer created with
// BPF_F_RB_OVERWRITE did not behave as one: filling it past its size
// failed records, did not move the producer past the size, or overwrote
// nothing.
var ErrRingNotOverwritten = errors.New("ring buffer did not overwrite")

// fillRing writes records until the ring of size bytes is full, so that
// every later record overwrites the oldest, and checks that it did: a
// ring in overwrite mode refuses no record, its producer position has
// passed the ring's size and its overwrite position (the oldest record
// not yet overwritten) has left zero.
func fillRing(prog *ebpf.Program, stats *ebpf.Map, pos *ringPositions, size uint32) error {
	if err := stats.Update(uint32(0), bpf.Stats{}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("reset stats: %w", err)
	}
	runs := ringbufFillRuns(size)
	ret, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(runs)})
	if err == nil && ret != bpf.RetDone {
		err = fmt.Errorf("program returned %d, want %d", ret, bpf.RetDone)
	}
	if err != nil {
		return fmt.Errorf("fill the ring: run program: %w", err)
	}
	var st bpf.Stats
	if err := stats.Lookup(uint32(0), &st); err != nil {
		return fmt.Errorf("fill the ring: read stats: %w", err)
	}
	return checkFilled(st, pos.producerPos(), pos.overwritePos(), size)
}

// checkFilled judges a fill of a ring of size bytes in overwrite mode from
// the stats of the fill and the producer and overwrite positions after it.
func checkFilled(st bpf.Stats, producerPos, overwritePos uint64, size uint32) error {
	if st.Failures > 0 {
		return fmt.Errorf("%w: %d of %d records refused while filling a %d-byte ring (the kernel accepted BPF_F_RB_OVERWRITE but the ring filled up as without it)",
			ErrRingNotOverwritten, st.Failures, st.Iterations, size)
	}
	if producerPos < uint64(size) {
		return fmt.Errorf("%w: producer position %d after %d records; want at least the ring size %d",
			ErrRingNotOverwritten, producerPos, st.Iterations, size)
	}
	if overwritePos == 0 {
		return fmt.Errorf("%w: overwrite position still 0 with the producer at %d in a %d-byte ring (no record was overwritten)",
			ErrRingNotOverwritten, producerPos, size)
	}
	return nil
}

// ringPositions maps the consumer and producer positions of a ring buffer
// (the first two pages of its mmap layout).
type ringPositions struct {
	consumer, producer []byte
}

func mapRingPositions(m *ebpf.Map) (*ringPositions, error) {
	page := os.Getpagesize()
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap ring buffer consumer page: %w", err)
	}
	prod, err := unix.Mmap(m.FD(), int64(page), page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(cons)
		return nil, fmt.Errorf("mmap ring buffer producer page: %w", err)
	}
	return &ringPositions{consumer: cons, producer: prod}, nil
}

// discardAll marks every committed record consumed. Call it only while no
// producer runs, so no record is still being written.
func (p *ringPositions) discardAll() error {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&p.consumer[0])), p.producerPos())
	return nil
}

// producerPos returns the producer position: bytes ever reserved.
func (p *ringPositions) producerPos() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.producer[0])))
}

// overwritePos returns the overwrite position of a ring in overwrite mode:
// where the oldest record not yet overwritten starts, 0 until the ring
// first wraps. Upstream (feeaf1346f80, Linux 6.19) keeps it two words
// after the producer position, beside pending_pos, in the producer page
// user space maps; on a ring without the mode that word stays 0.
func (p *ringPositions) overwritePos() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.producer[16])))
}

func (p *ringPositions) close() {
	unix.Munmap(p.consumer)
	unix.Munmap(p.producer)
}
