package fleet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// fakeQEMUEnv makes the test binary play QEMU (see fakeQEMU), for the tests
// of wall-clock round jobs and of faults: the boots take no CPU and no real
// time, so they disturb nobody's wall-clock measurements and show what the
// fleet does rather than what a kernel does.
const fakeQEMUEnv = "LPMBISECT_FLEET_FAKE_QEMU"

// fakeQEMUVersionEnv is the version the fake QEMU says it is.
const fakeQEMUVersionEnv = "LPMBISECT_FLEET_FAKE_QEMU_VERSION"

// fakeQEMUPath returns a QEMU binary that is this test binary in fake mode,
// of QEMU version 7.2.22.
func fakeQEMUPath(t *testing.T) string { return fakeQEMUVersion(t, "7.2.22") }

// fakeQEMUVersion returns a fake QEMU binary of the given version.
func fakeQEMUVersion(t *testing.T, version string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := fmt.Sprintf("#!/bin/sh\n%s=1 %s=%s exec '%s' \"$@\"\n", fakeQEMUEnv, fakeQEMUVersionEnv, version, self)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeKernel writes a "kernel" the fake QEMU boots: its guest reports value
// ns/op after sleeping for boot.
func fakeKernel(t *testing.T, name string, value float64, boot time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(fmt.Sprintf("%g %s\n", value, boot)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeQEMU answers --version, -accel help and -cpu help as QEMU 7.2 does,
// and otherwise "boots": it prints a kernel banner on the console, sleeps
// as the kernel file says, and writes one result with the kernel's value
// and a trailer on the results port. A paced boot (lpmbisect.paced=1)
// writes a ready note before the result and before the trailer and waits
// for the host's go line each time.
func fakeQEMU(args []string) int {
	switch strings.Join(args, " ") {
	case "--version":
		fmt.Printf("QEMU emulator version %s (fake)\n", os.Getenv(fakeQEMUVersionEnv))
		return 0
	case "-accel help":
		fmt.Println("Accelerators supported in QEMU binary:\ntcg\nkvm")
		return 0
	case "-cpu help":
		fmt.Println("x86 Westmere-v1           Westmere E56xx/L56xx/X56xx (Nehalem-C)")
		return 0
	}
	var kernel, cmdline string
	chardevs := map[string]io.ReadWriter{}
	var serials []string
	var port string
	for i := 0; i+1 < len(args); i++ {
		switch v := args[i+1]; args[i] {
		case "-kernel":
			kernel = v
		case "-append":
			cmdline = v
		case "-serial":
			serials = append(serials, strings.TrimPrefix(v, "chardev:"))
		case "-device":
			if rest, ok := strings.CutPrefix(v, "virtserialport,chardev="); ok {
				port = strings.Split(rest, ",")[0]
			}
		case "-chardev":
			kind, rest, _ := strings.Cut(v, ",")
			opts := map[string]string{}
			for _, kv := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				opts[k] = val
			}
			switch kind {
			case "file":
				f, err := os.OpenFile(opts["path"], os.O_WRONLY, 0)
				if err != nil {
					fmt.Fprintln(os.Stderr, "fake qemu:", err)
					return 1
				}
				chardevs[opts["id"]] = f
			case "socket":
				fd, _ := strconv.Atoi(opts["fd"])
				chardevs[opts["id"]] = os.NewFile(uintptr(fd), "socket")
			}
		}
	}
	data, err := os.ReadFile(kernel)
	var value float64
	var sleep time.Duration
	if err == nil {
		var d string
		_, err = fmt.Sscan(string(data), &value, &d)
		if err == nil {
			sleep, err = time.ParseDuration(d)
		}
	}
	if err != nil || len(serials) != 2 || chardevs[port] == nil || chardevs[serials[0]] == nil {
		fmt.Fprintln(os.Stderr, "fake qemu: cannot boot:", err, serials, port)
		return 1
	}
	time.AfterFunc(2*time.Minute, func() { os.Exit(3) }) // never outlive a broken test by much
	console, results := chardevs[serials[0]], chardevs[port]
	fmt.Fprintf(console, "Linux version 6.12.0-fake (fake@build) #1 SMP\r\nfake qemu pid %d\r\n", os.Getpid())
	time.Sleep(sleep)
	w := wire.NewWriter(results)
	paced := strings.Contains(cmdline, wire.PacedArg)
	in := bufio.NewReader(results)
	step := func(n int) error {
		if !paced {
			return nil
		}
		if err := w.Note(wire.KeyReady, strconv.Itoa(n)); err != nil {
			return err
		}
		line, err := in.ReadString('\n')
		if err == nil && line != wire.Go {
			err = errors.New("not a go line: " + line)
		}
		return err
	}
	r := &benchfmt.Result{Name: []byte("BenchmarkFake/op=lookup"), Iters: 1000, Values: []benchfmt.Value{{Value: value, Unit: "ns/op"}}}
	if err := step(1); err != nil {
		fmt.Fprintln(os.Stderr, "fake qemu:", err)
		return 1
	}
	w.Result(r)
	if err := step(2); err != nil {
		fmt.Fprintln(os.Stderr, "fake qemu:", err)
		return 1
	}
	w.End()
	return 0
}
