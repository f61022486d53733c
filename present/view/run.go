package view

import (
	"time"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Meta describes the run behind a comparison. Zero fields are left out of
// reports.
type Meta struct {
	// A and B are the kernels compared.
	A KernelInfo `json:"a,omitzero"`
	B KernelInfo `json:"b,omitzero"`
	// Accel is the accelerator the boots ran under: "kvm", "tcg" or
	// "tcg-icount" (the value of the results' accel key).
	Accel string `json:"accel,omitempty"`
	// Seed is the seed of the randomized order of A and B boots; nil if the
	// order was not randomized.
	Seed *int64 `json:"seed,omitempty"`
	// Samples is the number of samples per benchmark per boot.
	Samples int `json:"samples,omitempty"`
	// FailOn is the --fail-on rule the outcome is reported for.
	FailOn compare.FailOn `json:"-"`
	// Command is the command line that produced the results.
	Command string `json:"command,omitempty"`
	// Date is when the run started.
	Date time.Time `json:"date,omitzero"`
	// ResultsFile is the raw benchfmt file that plain benchstat reads.
	ResultsFile string `json:"results_file,omitempty"`
	// FailedBoots counts boots that did not complete (panic, stall,
	// timeout) and so are not in the statistics.
	FailedBoots int `json:"failed_boots,omitempty"`
	// Host describes the machine (CPU model, cores), if known.
	Host string `json:"host,omitempty"`
	// BootCost is what each side's boots cost, phase by phase, under
	// icount (measure.BootCosts); nil for a side without phases.
	BootCost [2]*wire.BootCost `json:"boot_cost,omitzero"`
	// CPU is the CPU each side's boots ran on and what their kernel made
	// of it: the model and profile, the mitigations and the return thunk
	// (SideCPU); nil for a side whose results do not say.
	CPU [2]*SideCPU `json:"cpu,omitzero"`
	// Insight is the block that says why it changed (symbol sizes, the
	// calls of the functions of interest, the benchmark programs, call
	// counts), rendered after the table by every format; nil leaves it
	// out. JSON carries it as Document.Insight.
	Insight *insight.Diff `json:"-"`
	// Verifier are the verifier rows by program (Verifiers), for the
	// formats that speak veristat's language; nil when there are none.
	Verifier []VerifierProgram `json:"-"`
	// Veristat are the stats the veristat format emits, by veristat's
	// names, in order, as veristat's --emit chooses them; nil for all of
	// them, in the order of veristat's own CSV.
	Veristat []string `json:"-"`
}

// KernelInfo describes one side's kernel.
type KernelInfo struct {
	// Input is what the user passed: a bzImage, .deb or build directory.
	Input string `json:"input,omitempty"`
	// Release is the kernel release (uname -r), the label in results.
	Release string `json:"release,omitempty"`
	// SHA256 is the hex digest of the kernel image.
	SHA256 string `json:"sha256,omitempty"`
}

// SideCPU is the CPU one side's boots ran on, as its results record it:
// the model QEMU emulated (wire.KeyCPUModel) and the CPU profile that
// model is, the extra kernel parameters (wire.KeyAppend), and the kernel's
// own view of the CPU (wire.KeyVulnerabilities) with the return thunk it
// names (wire.ReturnThunk).
type SideCPU struct {
	// Profile is the profile's name ("default" for the default model),
	// "" for a model no profile of this lpmbisect emulates (KVM's host,
	// results of another version).
	Profile string `json:"profile,omitempty"`
	Model   string `json:"model,omitempty"`
	// Append are the kernel parameters the boots got besides the plan,
	// the fixed ones and the profile's own.
	Append          string               `json:"append,omitempty"`
	ReturnThunk     string               `json:"return_thunk,omitempty"`
	Vulnerabilities []wire.Vulnerability `json:"vulnerabilities,omitempty"`
}
