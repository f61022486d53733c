package calibrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/cpuinfo"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Host identifies the machine a calibration holds for: wall-clock numbers
// are per CPU family and per machine, so are their floors.
type Host struct {
	Name string `json:"name"` // host name
	CPU  string `json:"cpu"`  // model name in /proc/cpuinfo (cpuinfo.Info.Model)
	// CPUs is the number of processors /proc/cpuinfo lists (whatever
	// this process may run on).
	CPUs int `json:"cpus"`
}

// thisHost describes the machine this process runs on (its CPUs as
// cpuinfo.Read reads them).
func thisHost() (Host, error) {
	name, err := os.Hostname()
	if err != nil {
		return Host{}, fmt.Errorf("calibrate: host name: %w", err)
	}
	cpus, err := cpuinfo.Read()
	if err != nil {
		return Host{}, fmt.Errorf("calibrate: %w", err)
	}
	return Host{Name: name, CPU: cpus.Model, CPUs: cpus.Count}, nil
}

// Key names what a calibration holds for. Two comparisons may share
// bounds only when their keys are equal.
type Key struct {
	Host Host `json:"host"`
	// Accel is the accelerator as results name it (icount, tcg, kvm).
	Accel string `json:"accel"`
	// QEMU and CPUModel are the QEMU version and the CPU model it
	// emulated, from the results' qemu and cpu-model keys.
	QEMU     string `json:"qemu"`
	CPUModel string `json:"cpu_model"`
	// Samples and Rounds are the plan's samples per benchmark per boot and
	// program runs per sample (the results' samples and rounds keys).
	Samples int `json:"samples"`
	Rounds  int `json:"rounds"`
	// Paired says whether comparisons run in pairs; always false under
	// icount, whose counts need no pairs.
	Paired bool `json:"paired"`
	// BootArgs are the kernel parameters every boot under Accel gets
	// besides its plan (vmrunner.FixedKernelArgs, with the CPU profile's
	// parameters): boot work skipped, which
	// moves what a boot does around the samples and so their spread (the
	// APIC timer's calibration skipped under icount widened the random
	// lookups' from 0.059 % to 0.100 % on Debian 6.1). A calibration stored
	// before they changed, without them, is another key.
	BootArgs string `json:"boot_args,omitempty"`
}

// bootArgs returns Key.BootArgs for boots under accel with the CPU
// profile cpu.
func bootArgs(accel wire.Accel, cpu vmrunner.CPUProfile) string {
	return strings.Join(vmrunner.FixedKernelArgs(accel, cpu), " ")
}

// ErrNoAccel is returned by keyOf for results that do not say which
// accelerator measured them.
var ErrNoAccel = errors.New("results do not name their accelerator")

// keyOf returns the key of results measured on host, for comparisons that
// run in pairs or not. The results must agree on the accelerator, QEMU
// version, CPU model, samples and rounds.
func keyOf(results []*benchfmt.Result, host Host, paired bool) (Key, error) {
	k := Key{Host: host}
	var err error
	if k.Accel, err = oneValue(results, wire.KeyAccel); err != nil {
		return Key{}, err
	}
	if k.Accel == "" {
		return Key{}, fmt.Errorf("calibrate: %w (no %q key)", ErrNoAccel, wire.KeyAccel)
	}
	k.Paired = paired && !wire.Accel(k.Accel).CountsInstructions()
	if k.QEMU, err = oneValue(results, wire.KeyQEMU); err != nil {
		return Key{}, err
	}
	if k.CPUModel, err = oneValue(results, wire.KeyCPUModel); err != nil {
		return Key{}, err
	}
	// A model no profile of this lpmbisect emulates gets the default's
	// arguments: its key differs by the model anyway.
	cpu, _ := vmrunner.CPUProfileOfModel(wire.Accel(k.Accel), k.CPUModel)
	k.BootArgs = bootArgs(wire.Accel(k.Accel), cpu)
	if k.Samples, err = intValue(results, wire.KeySamples); err != nil {
		return Key{}, err
	}
	if k.Rounds, err = intValue(results, wire.KeyRounds); err != nil {
		return Key{}, err
	}
	return k, nil
}

// String describes the key in words.
func (k Key) String() string {
	pairs := "unpaired"
	if k.Paired {
		pairs = "paired"
	}
	host := k.Host.Name
	if k.Host.CPU != "" || k.Host.CPUs != 0 { // a host class (Remote) has neither
		host += fmt.Sprintf(" (%s, %d CPUs)", k.Host.CPU, k.Host.CPUs)
	}
	return fmt.Sprintf("%s on %s, QEMU %s, CPU model %s, %d samples × %d rounds, %s",
		k.Accel, host, orNone(k.QEMU), orNone(k.CPUModel), k.Samples, k.Rounds, pairs)
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// ID is a short hash of the whole key (words.ShortHash of its SHA-256):
// what stores file it under.
func (k Key) ID() string {
	data, err := json.Marshal(k)
	if err != nil {
		panic(err) // a struct of strings, ints and a bool always encodes
	}
	sum := sha256.Sum256(data)
	return words.ShortHash(hex.EncodeToString(sum[:]))
}

// fileName is the name of the key's file under <cache>/calibration: the
// accelerator, for people looking, and the key's ID.
func (k Key) fileName() string {
	accel := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, k.Accel)
	return accel + "-" + k.ID() + ".json"
}
