package view

import (
	"time"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// Host is what this host offers lpmbisect (lpmbisect host): the
// accelerators and why each works or not, what --accel auto chooses here,
// the memory pass's plugin and the browser of the served pages' test.
type Host struct {
	QEMU        string `json:"qemu"`                   // the binary asked
	QEMUVersion string `json:"qemu_version,omitempty"` // "" when it did not answer
	// QEMUProblem says why QEMU cannot be used ("" when it can).
	QEMUProblem string `json:"qemu_problem,omitempty"`
	// Accels are kvm, icount and tcg, in that order.
	Accels []HostAccel `json:"accels"`
	// Auto is what --accel auto chooses here ("" when nothing works).
	Auto string `json:"auto"`
	// KVMProbe are the boots of the probe that decided KVM's verdict
	// (now or kept), KVMVerdictAt when it ran, KVMVerdictFile where it
	// is kept, KVMCached whether it was kept from an earlier probe.
	KVMProbe       []vmrunner.KVMProbeBoot `json:"kvm_probe,omitempty"`
	KVMVerdictAt   time.Time               `json:"kvm_verdict_at,omitzero"`
	KVMVerdictFile string                  `json:"kvm_verdict_file,omitempty"`
	KVMCached      bool                    `json:"kvm_cached"`
	// MemoryPlugin is the memory pass's QEMU plugin ("" when not found),
	// MemoryPluginLooked where it was looked for.
	MemoryPlugin       string   `json:"memory_plugin"`
	MemoryPluginLooked []string `json:"memory_plugin_looked"`
	// Browser drives the served pages' test ("" when none was found on
	// PATH), BrowserLooked the names looked for.
	Browser       string   `json:"browser"`
	BrowserLooked []string `json:"browser_looked"`
}

// HostAccel is one accelerator on this host.
type HostAccel struct {
	Name  string `json:"name"`
	Works bool   `json:"works"`
	// Why says why it works or not; Source, for KVM, where that was
	// found (a probe now, or a verdict kept).
	Why    string `json:"why"`
	Source string `json:"source,omitempty"`
}
