package main

import (
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// faultyOutput is the guest's results output. With a fault set (TEST-ONLY,
// lpmbisect.fault=KIND) it misbehaves right after writing the first result,
// so that the host's handling of hung, flooding, garbled and crashed guests
// can be tested with a real guest. Without a fault it is the wire writer.
type faultyOutput struct {
	w     *wire.Writer
	ch    *channel
	fault string
}

func (f *faultyOutput) Note(key, text string) error { return f.w.Note(key, text) }

func (f *faultyOutput) Result(r *benchfmt.Result) error {
	if err := f.w.Result(r); err != nil {
		return err
	}
	if f.fault != "" {
		applyFault(f.fault, f.w, f.ch, r)
	}
	return nil
}

// applyFault misbehaves as kind says. It returns only for an unknown kind.
func applyFault(kind string, w *wire.Writer, ch *channel, r *benchfmt.Result) {
	logf("TEST-ONLY fault %q: misbehaving on purpose", kind)
	switch kind {
	case faultHang:
		sleepForever()
	case faultFlood:
		for w.Result(r) == nil {
		}
	case faultLongline:
		ch.Write([]byte("Benchmark"))
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := ch.Write(chunk); err != nil {
				break
			}
		}
	case faultGarbage:
		rng := rand.NewChaCha8([32]byte{'l', 'p', 'm'})
		chunk := make([]byte, 4096)
		for {
			rng.Read(chunk)
			if _, err := ch.Write(chunk); err != nil {
				break
			}
		}
	case faultPanic:
		ch.drain()
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
			logf("fault panic: %v", err)
		}
		time.Sleep(time.Second)
		os.Exit(3) // PID 1 exiting panics the kernel too
	case faultExit:
		ch.drain()
		os.Exit(0)
	default:
		return
	}
	logf("fault %q: the channel broke; blocking forever", kind)
	sleepForever()
}

// sleepForever blocks without tripping the Go runtime's deadlock detector
// (which would exit PID 1 and panic the kernel).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}
