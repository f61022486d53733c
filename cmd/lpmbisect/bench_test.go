package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// BenchmarkBootOverhead measures one `lpmbisect run` boot against a bare
// qemu-system-x86_64 boot of the same kernel, initramfs and kernel command
// line, alternating the two in one run so host noise hits both alike.
// Goal: lpmbisect/bare ≤ 1.05.
func BenchmarkBootOverhead(b *testing.B) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(b, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
	deb := testkernels.Deb(b, testkernels.Debian612)
	guest := testguest.Path(b)
	cache := b.TempDir()
	plan := measure.GuestPlan{Bench: "LPMTrie/op=lookup/keys=random", Samples: 3, Entries: 10000, Rounds: 20}
	setup, err := measure.NewSetup(measure.Options{Accel: wire.AccelTCG, Guest: guest, CacheDir: cache, RunDir: b.TempDir(), Plan: plan})
	if err != nil {
		b.Fatal(err)
	}
	runner, err := setup.Start([]string{deb}, measure.RunOptions{})
	if err != nil {
		b.Fatal(err)
	}
	sides := runner.Sides
	bare := vmrunner.Config{
		Kernel: sides[0].Kernel.Image, Initramfs: sides[0].Image.Path, Accel: wire.AccelTCG,
		KernelArgs: append(plan.KernelArgs(), "lpmbisect.accel=tcg"), RunDir: b.TempDir(),
	}
	bareCmd := bare.CommandLine()
	args := []string{"run", "--accel", "tcg", "--cache-dir", cache, "--guest", guest,
		"--bench", plan.Bench, "--samples", "3", "--out", filepath.Join(b.TempDir(), "r.txt")}

	var tool, qemu time.Duration
	for b.Loop() {
		start := time.Now()
		if code, _, stderr := runCLI(b, append(args, "--run-dir", b.TempDir(), deb)...); code != 0 {
			b.Fatalf("lpmbisect run: exit %d\n%s", code, stderr)
		}
		tool += time.Since(start)

		start = time.Now()
		cmd := exec.Command(bareCmd[0], bareCmd[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare QEMU: %v\n%s", err, out)
		}
		qemu += time.Since(start)
		if st, err := os.Stat(filepath.Join(bare.RunDir, "results.out")); err != nil || st.Size() == 0 {
			b.Fatalf("bare QEMU boot delivered no results")
		}
	}
	n := float64(b.N)
	b.ReportMetric(tool.Seconds()/n, "lpmbisect-s/boot")
	b.ReportMetric(qemu.Seconds()/n, "bare-s/boot")
	b.ReportMetric(tool.Seconds()/qemu.Seconds(), "lpmbisect/bare")
}
