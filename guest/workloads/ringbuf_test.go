package workloads

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

func TestRingbufFillRuns(t *testing.T) {
	perRun := ringbufBatch * ringbufRecordBytes
	if ringbufRecordBytes != 16 {
		t.Errorf("ringbufRecordBytes = %d; want 16 (8-byte payload, 8-byte header)", ringbufRecordBytes)
	}
	for _, size := range []uint32{4096, 256 << 10, ringbufOverwriteSize, 1 << 20} {
		runs := ringbufFillRuns(size)
		if written := runs * perRun; written < int(size) || written-perRun >= int(size) {
			t.Errorf("ringbufFillRuns(%d) = %d runs writing %d bytes; want the fewest runs that write at least %d", size, runs, written, size)
		}
	}
}

func TestCheckFilled(t *testing.T) {
	const size = 1 << 12
	for _, c := range []struct {
		name      string
		st        bpf.Stats
		pos, over uint64
		wantFail  bool
	}{
		{"full, nothing refused", bpf.Stats{Iterations: 300}, 300 * 16, 45 * 16, false},
		{"one past full", bpf.Stats{Iterations: 257}, size + 16, 16, false},
		{"records refused", bpf.Stats{Iterations: 300, Failures: 45}, 255 * 16, 0, true},
		{"producer short of the size", bpf.Stats{Iterations: 100}, 100 * 16, 0, true},
		{"full but nothing overwritten", bpf.Stats{Iterations: 256}, size, 0, true},
	} {
		err := checkFilled(c.st, c.pos, c.over, size)
		if got := errors.Is(err, ErrRingNotOverwritten); got != c.wantFail || (err != nil) != c.wantFail {
			t.Errorf("%s: checkFilled(%+v, %d, %d, %d) = %v; want failure %v", c.name, c.st, c.pos, c.over, size, err, c.wantFail)
		}
	}
}

// TestFillRingCatchesAnOrdinaryRing fills a ring buffer created without
// BPF_F_RB_OVERWRITE on the host's kernel, as the overwrite rows fill
// theirs: the full ring refuses records, which fillRing must report
// instead of letting a benchmark measure refusals as overwrites.
func TestFillRingCatchesAnOrdinaryRing(t *testing.T) {
	skipWithoutBPF(t)
	if err := ReqRingbuf.Probe(); err != nil {
		t.Skipf("no ring buffer here: %v", err)
	}
	spec, err := bpf.RingbufProducer{API: bpf.Reserve, Batch: ringbufBatch, Size: 1 << 16, NoWakeup: true}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	pos, err := mapRingPositions(coll.Maps[bpf.RingbufMapName])
	if err != nil {
		t.Fatal(err)
	}
	defer pos.close()
	err = fillRing(coll.Programs[bpf.RingbufProgName], coll.Maps[bpf.StatsMapName], pos, 1<<16)
	if !errors.Is(err, ErrRingNotOverwritten) {
		t.Errorf("fillRing(ring without BPF_F_RB_OVERWRITE) = %v; want ErrRingNotOverwritten", err)
	}
	if got := pos.producerPos(); got == 0 || got >= 1<<16 {
		t.Errorf("producer position after filling an ordinary 64 KiB ring = %d; want records up to the size, no further", got)
	}
}
