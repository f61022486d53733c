package main

import (
	"context"
	"io"
	"log"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/flow/fleet"
	"github.com/lpmbisect/lpmbisect/host/initramfs"
)

func workerCommand(r *invocation) *cli.Command {
	var w struct {
		queues, name, cacheDir, kvmKernel string
		slots                             int
		trees                             []string
	}
	opts := []opt{configOpt(r),
		dbOpt(r),
		{Name: "queues", Ptr: &w.queues, Usage: "queues to work, comma-separated: icount, tcg-CLASS, kvm-CLASS (boots), build, build-CLASS (kernel builds); those whose accelerator does not work here are dropped, saying why"},
		{Name: "name", Ptr: &w.name, Usage: "the worker's name in the fleet (default: the host name; two workers on one host need two)"},
		{Name: "slots", Ptr: &w.slots, Usage: "icount boots at once (0: one per CPU); wall-clock and build queues run one job at a time"},
		{Name: "cache-dir", Ptr: &w.cacheDir, Usage: "fetched kernels and initramfs images, boot logs, build trees (default: <user cache dir>/lpmbisect/worker-NAME)"},
		{Name: "guest", Ptr: &r.Measure.Guest, Env: "LPMBISECT_GUEST", Usage: "guest binary; clients must pack the same one (default: lpmbisect-guest beside this executable)"},
		{Name: "qemu", Ptr: &r.Measure.QEMU, Usage: "QEMU binary"},
		{Name: "kvm-probe-kernel", Ptr: &w.kvmKernel, Usage: "a kernel (bzImage, .deb) to boot once under KVM at start, to see whether KVM runs guests here, when no verdict is kept in the cache directory (without either, kvm queues are dropped)"},
		{Name: "tree", Ptr: &w.trees, Usage: "NAME=DIR: a kernel git tree build jobs may name (repeatable; its origin is fetched for commits it lacks); builds use the [build] section of --config as configuration \"default\""},
	}
	return command("worker", "work a fleet's boot and build jobs on this host until SIGINT or SIGTERM (one log line per event on stderr)", "", opts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("worker takes no arguments, got %q", c.Args().Slice())
		}
		url, err := r.fleetDB("worker")
		if err != nil {
			return err
		}
		queues, build, err := fleet.ParseQueues(w.queues)
		if err != nil {
			return usageError("--queues: %v", err)
		}
		if len(queues) == 0 {
			return usageError("worker needs --queues, e.g. --queues icount or --queues icount,build")
		}
		trees, err := fleet.ParseTrees(w.trees)
		if err != nil {
			return usageError("--tree %v", err)
		}
		if build && len(trees) == 0 {
			return usageError("a build queue needs the trees its jobs may name: give --tree NAME=DIR")
		}
		if w.slots < 0 {
			return usageError("--slots %d must not be negative", w.slots)
		}
		guest := r.Measure.Guest
		if guest == "" {
			if guest, err = initramfs.FindGuest(); err != nil {
				return usageError("--guest: %v", err)
			}
		}
		if w.cacheDir == "" {
			if w.cacheDir, err = fleet.WorkerCacheDir(w.name); err != nil {
				return usageError("--cache-dir: %v", err)
			}
		}
		b := r.Build
		worker := &fleet.Worker{URL: url, Name: w.name, Queues: queues, CacheDir: w.cacheDir, Guest: guest, QEMU: r.Measure.QEMU,
			Slots: w.slots, KVMProbeKernel: w.kvmKernel, Trees: trees,
			Builds: map[string]fleet.BuildConfig{"default": {Base: b.Base, Fragments: b.Fragments, Make: b.Make, MakeFlags: b.MakeFlags, Jobs: b.Jobs}},
			Log:    workerLog(c.App.ErrWriter)}
		err = worker.Run(c.Context)
		if c.Context.Err() != nil {
			if err != nil {
				worker.Log.Printf("worker stop: %v", err)
			}
			return context.Cause(c.Context) // 130 or 143, as any command stopped by a signal
		}
		return fleetError(err) // ErrNoQueues stays exit 4: nothing this host can work
	})
}

// workerLog is the worker's log: one line per event, no colours. Under
// systemd (JOURNAL_STREAM set) the journal stamps each line itself;
// elsewhere the line carries the time.
func workerLog(w io.Writer) *log.Logger {
	if os.Getenv("JOURNAL_STREAM") != "" {
		return log.New(w, "", 0)
	}
	return log.New(w, "", log.LstdFlags)
}
