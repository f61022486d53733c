package importrule

import (
	"slices"
	"strings"
)

// house is the plan of the module, written once: its rooms (the top
// folders), bottom first, each with the rooms below it that its packages
// may import and its packages in layers. The tests of this package hold
// the code to it (TestPlan), draw the house from the code's imports
// (TestHouse) and write the package map of docs/architecture.md from it
// (TestArchitectureDoc): a new package or a new arrow changes this table
// and nothing else.
var house = []room{
	{folder: "wire", holds: "the host–guest contract",
		layers: [][]pkg{
			{{"wire", "the host–guest contract: plan parameters, label keys, units, channel, limits, the accelerator's name", nil}},
		}},
	{folder: "internal", holds: "leaves: helpers that need nothing of ours; these tests",
		layers: [][]pkg{
			{{"internal/words", "plurals, short hashes, printable strings", nil},
				{"internal/logtail", "the one bounded reader of log ends: builds, QEMU, errors, consoles", nil},
				{"internal/cachefile", "the atomic cache, SHA-256", nil},
				{"internal/cpuinfo", "the host CPU model", nil},
				{"internal/git", "git, run", nil},
				{"internal/interrupt", "signals", nil},
				{"internal/shellquote", "shell quoting", nil},
				{"internal/importrule", "this plan and the tests that hold the code to it", nil}},
			{{"internal/version", "the version stamp", nil}},
		}},
	{folder: "guest", holds: "what runs inside the booted kernel", imports: []string{"wire", "internal"},
		layers: [][]pkg{
			{{"guest/bpf", "BPF programs in Go asm", nil}},
			{{"guest/workloads", "the benchmark registry, presets, probes", nil}},
			{{"guest/agent", "the guest's run: channel, pacing, the insight, profile and memory passes; the injector hook of the tests' faults", nil}},
		}},
	{folder: "stats", holds: "statistics over samples, knowing nothing of kernels or QEMU", imports: []string{"wire", "internal"},
		layers: [][]pkg{
			{{"stats/sample", "the one median", nil}},
			{{"stats/compare", "verdicts and the look loop", nil},
				{"stats/changepoint", "change points and excursions", nil}},
			{{"stats/changepoint/internal/sim", "the change-point pass's simulations", nil}},
			{{"stats/changepoint/internal/cpsim", "the command that prints the simulations' tables", nil}},
		}},
	{folder: "config", holds: "the configuration file", imports: []string{"wire", "internal", "stats"},
		layers: [][]pkg{
			{{"config", "kernels.toml and its flags", nil}},
			{{"config/cliflag", "flags bound to config keys: a flag given beats the file, the file beats the default", nil}},
		}},
	{folder: "history", holds: "the nights' database", imports: []string{"internal", "stats"},
		layers: [][]pkg{
			{{"history", "the nights' database, SQLite or PostgreSQL", nil}},
		}},
	{folder: "host", holds: "one boot's host path: kernel inputs, builds, initramfs, QEMU, measuring, why",
		imports: []string{"wire", "internal", "guest", "stats", "config"},
		layers: [][]pkg{
			{{"host/kernel", "the one judge of kernel inputs", nil},
				{"host/vmrunner", "QEMU, its accelerators and deadlines, the CPU profiles and their cores' sizes and latencies (`CoreModel`), and the memory plugin: C in `host/vmrunner/memplugin/`, no Go package, built by `scripts/setup`", nil},
				{"host/initramfs", "the guest's initramfs, content-addressed", nil}},
			{{"host/insight", "symbols, sizes, callees, counts", nil},
				{"host/kbuild", "kernel builds and builders, the embedded fragment", nil}},
			{{"host/measure", "boots of sides: Start, runners, executors, results files", nil}},
		}},
	{folder: "present", holds: "what reports show, as data, and its rendering; below the workflows, which fill the views",
		imports: []string{"wire", "internal", "guest", "stats", "history", "host"},
		layers: [][]pkg{
			{{"present/view", "what reports show, as data, filled by the domain packages; the history's read queries", nil}},
			{{"present/report", "rendering: text, markdown, JSON, HTML, SVG, mail, the served pages", []string{"cmd/lpmbisect", "present/serve"}}},
			{{"present/serve", "the served history: routes, token, sessions, JSON", nil}},
		}},
	{folder: "flow", holds: "the workflows: calibration, one comparison, campaigns, bisections, series, nights, fleet",
		imports: []string{"wire", "internal", "guest", "stats", "config", "history", "host", "present"},
		layers: [][]pkg{
			{{"flow/calibrate", "what boots of one image agree to on this host", nil}},
			{{"flow/ab", "one comparison", nil},
				{"flow/campaign", "the bench, state, store and insight diff that bisect, series and nightly share", nil},
				{"flow/fleet", "River jobs, workers, blobs", nil}},
			{{"flow/bisect", "bisections of commits and of images", nil},
				{"flow/series", "patch series", nil}},
			{{"flow/nightly", "tracked series, nights, alerts, auto-bisect", nil}},
		}},
	{folder: "cmd", holds: "the programs",
		imports: []string{"wire", "internal", "guest", "stats", "config", "history", "host", "present", "flow"},
		layers: [][]pkg{
			{{"cmd/lpmbisect", "flags to options, errors to exit codes, files written", nil},
				{"cmd/lpmbisect-guest", "the guest's main", nil}},
		}},
	{folder: "testbed", holds: "the test harnesses, for tests only", testsOnly: true,
		imports: []string{"wire", "internal", "guest", "stats", "config", "history", "host", "present", "flow"},
		layers: [][]pkg{
			{{"testbed/testkernels", "the Debian kernels, the shared cache", nil},
				{"testbed/testkbuild", "a fake kbuild tree", nil},
				{"testbed/testseries", "synthetic nightly series, as values and as results files", nil},
				{"testbed/testcampaign", "fake kernels and a fake measurer for campaigns that boot nothing", nil},
				{"testbed/testsetup", "a measuring set-up that never boots", nil},
				{"testbed/testqemu", "fake QEMUs, shell scripts, whose KVM fails, crawls or works", nil},
				{"testbed/guestfaults", "the faults the tests' guest can be armed with: hung, flooding, garbled, crashed and lying guests", nil}},
			{{"testbed/guestfaults/faultguest", "the tests' guest: cmd/lpmbisect-guest with those faults", nil},
				{"testbed/testguest", "builds the tests' guest", nil},
				{"testbed/testpg", "PostgreSQL on loopback", nil}},
		}},
}

// room is one top folder of the house: one layer of the flow.
type room struct {
	folder string
	// holds says what the room holds, for the doc's map.
	holds string
	// imports are the rooms below whose packages the room's non-test
	// files may import.
	imports []string
	// testsOnly says the room's packages are imported by tests alone.
	testsOnly bool
	// layers are the room's packages, bottom first: a package's non-test
	// files import only packages of lower layers of its room, so siblings
	// (fleet and bisect) stay apart.
	layers [][]pkg
}

// pkg is one package of a room: its path below the module and what it
// owns.
type pkg struct {
	path, owns string
	// onlyImportedBy, when set, are the only packages that may import it,
	// tests included, its own files aside.
	onlyImportedBy []string
}

// place is where the plan puts a package: its room (an index of the
// plan) and its layer in the room.
type place struct{ room, layer int }

// places maps every package the plan names to its place.
func places(plan []room) map[string]place {
	out := map[string]place{}
	for i, r := range plan {
		for l, ps := range r.layers {
			for _, p := range ps {
				out[p.path] = place{i, l}
			}
		}
	}
	return out
}

// roomOf is the index of the room that holds the package path, or -1.
func roomOf(plan []room, path string) int {
	top, _, _ := strings.Cut(path, "/")
	return slices.IndexFunc(plan, func(r room) bool { return r.folder == top })
}

// floors gives each room its floor: 1 for a room that may import no
// other, else one above the highest room it may import.
func floors(plan []room) []int {
	out := make([]int, len(plan))
	for i, r := range plan {
		out[i] = 1
		for _, below := range r.imports {
			if j := slices.IndexFunc(plan[:i], func(r room) bool { return r.folder == below }); j >= 0 {
				out[i] = max(out[i], out[j]+1)
			}
		}
	}
	return out
}
