package main

import (
	"embed"
	"errors"
	"log"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// opt is a flag bound to the field it sets (see cliflag).
type opt = cliflag.Flag

// command is a CLI command: its flags are bound to fields, its long help is
// help/<name>.txt.
func command(name, usage, args string, opts []opt, action func(*cli.Context) error) *cli.Command {
	flags, setLists := cliflag.Bind(opts)
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: args, Description: help(name), Flags: flags, OnUsageError: onUsageError,
		Action: func(c *cli.Context) error { setLists(c); return action(c) },
	}
}

//go:embed help
var helpFiles embed.FS

func help(name string) string {
	data, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a command without its help file is a build mistake
	}
	return strings.TrimSpace(string(data))
}

// invocation is one lpmbisect command as invoked: its configuration file
// and what its flags set that the file does not.
type invocation struct {
	*config.File
	runDir, out, html, format, failOn, good, bad, src string
	minEffect                                         string // --min-effect: a percentage, "auto" or "auto:PCT"
	seed                                              uint64
	verbose, paired, noControls, autoMinEffect        bool
	log                                               *log.Logger
	remote                                            *remote // --db, --queue: boots on a fleet (fleet.go)

	insight  insightFlags  // --no-insight, --symbols, --debug-a, --debug-b (insight.go)
	workload workloadFlags // --workload, --packet, --workload-maps (workload.go)
	// workloadProgs are the --workload object's programs, once checked.
	workloadProgs workloads.WorkloadPrograms
	// runFormat is run's --format: benchfmt or veristat.
	runFormat string
	// cpuProfileB and appendB are compare's --cpu-profile-b and
	// --append-b: side B's own CPU profile and extra kernel parameters.
	cpuProfileB, appendB string
	// veristatEmit are the stats of the veristat format
	// (--veristat-emit, once read by readVeristatEmit).
	veristatEmit []string
}

// readVeristatEmit reads --veristat-emit (report.veristat_emit).
func (r *invocation) readVeristatEmit() error {
	emit, err := report.ParseVeristatEmit(r.Report.VeristatEmit)
	if err != nil {
		return flagError(&config.ValueError{Key: "report.veristat_emit", Detail: err.Error()})
	}
	r.veristatEmit = emit
	return nil
}

// vmOpts are the flags of the commands that boot kernels.
func vmOpts(r *invocation) []opt {
	return append(append(cliflag.Keys(r.File, "bench", "measure"), workloadOpts(r)...),
		opt{Name: "run-dir", Ptr: &r.runDir, Usage: "where console logs of each boot go (default: <cache-dir>/runs/<time>)"},
		opt{Name: "verbose", Ptr: &r.verbose, Alias: "v", Usage: "print QEMU command lines and decisions"},
		configOpt(r))
}

// minEffectOpt is --min-effect: stats.min_effect, or auto (see
// config.ParseMinEffect).
func minEffectOpt(r *invocation) opt {
	r.minEffect = strconv.FormatFloat(r.Stats.MinEffect, 'g', -1, 64)
	return opt{Name: "min-effect", Ptr: &r.minEffect, Usage: "smallest change that counts, in percent (DIFFERENT needs more, SAME excludes it); auto: each benchmark's calibrated floor, at least the default (auto:PCT: at least PCT; see lpmbisect calibrate)"}
}

// stats reads --min-effect into the statistics and checks them; it reports
// whether the floors are calibrated (auto).
func (r *invocation) stats() (auto bool, err error) {
	if r.Stats.MinEffect, auto, err = config.ParseMinEffect(r.minEffect, r.Stats.MinEffect); err != nil {
		return false, flagError(err)
	}
	return auto, flagError(r.Stats.Check())
}

// stdoutFormat reads --format: the report on stdout, never HTML (--html FILE).
func (r *invocation) stdoutFormat() (report.Format, error) {
	f, err := report.ParseFormat(r.format)
	if err != nil || f == report.FormatHTML {
		return f, usageError("--format %q: use text, markdown, json, veristat, kcidb or github (and --html FILE for HTML)", r.format)
	}
	return f, nil
}

func configOpt(r *invocation) opt {
	return opt{Name: "config", Ptr: &r.Path, Usage: "TOML configuration file; flags given on the command line win (see kernels.example.toml)"}
}

// verdictOpts shape verdicts and reports (compare and stat).
func verdictOpts(r *invocation) []opt {
	opts := append([]opt{minEffectOpt(r),
		cliflag.Key(r.File, "stats.alpha", "family-wise error rate of DIFFERENT claims (and of each SAME claim)")},
		append(cliflag.Keys(r.File, "stats"),
			opt{Name: "fail-on", Ptr: &r.failOn, Usage: "what fails the exit code: regression (only a change for the worse) or change (any)"},
			opt{Name: "format", Ptr: &r.format, Usage: "report on stdout: text, markdown, json, veristat (veristat -C's CSV of the verifier rows), kcidb (a KCIDB v4.4 submission), github (GitHub Actions annotations)"},
			opt{Name: "html", Ptr: &r.html, Usage: "also write an HTML report with SVG plots of every boot to this file"},
			opt{Name: "no-controls", Ptr: &r.noControls, Usage: "do not run the noop and baseline controls alongside (stat: treat them as ordinary benchmarks)"})...)
	return append(opts, cliflag.Keys(r.File, "report")...)
}

// flagError turns a library error about a value into a usage error that
// names its flag (config.FlagName).
func flagError(err error) error {
	var pe *wire.ParamError
	var oe *measure.OptionError
	var ve *config.ValueError
	var be *compare.BootsError
	switch {
	case errors.As(err, &pe):
		name := pe.Param.Name()
		return usageError("--%s%s", config.FlagName(name), strings.TrimPrefix(pe.Error(), name))
	case errors.As(err, &oe) && errors.Is(err, measure.ErrIcountCPUs):
		return usageError("--cpus: %v (give --cpus 1)", oe.Err)
	case errors.As(err, &oe):
		return usageError("--%s: %v", config.FlagName(oe.Option), oe.Err)
	case errors.As(err, &ve):
		return usageError("--%s %s", config.FlagName(ve.Key), ve.Detail)
	case errors.As(err, &be):
		limit := strconv.Itoa(be.Max)
		if be.MaxOption != "" {
			limit = "--" + config.FlagName(be.MaxOption) + " " + limit
		}
		return usageError("--%s %d must be between 1 and %s", config.FlagName(be.Option), be.N, limit)
	}
	return err
}

// writable checks, before any work, that the file a flag names ("" for
// none) can be written.
func writable(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := measure.CheckWritable(path); err != nil {
		return usageError("--%s: %v", flag, err)
	}
	return nil
}
