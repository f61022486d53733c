package nightly

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
)

// seriesRun is one series' night in the making.
type seriesRun struct {
	o     Options
	db    *history.DB
	conf  config.Series
	cfg   config.File
	dir   string // the series' state directory
	log   *log.Logger
	setup *bisect.Bisector
	n     *Night
}

// Sides of a night's runner, in the order of its inputs.
const (
	sideReference = "A"
	sideTip       = "B"
	sidePrevious  = "C" // the previous tip rebuilt with tonight's toolchain
)

var roleOf = map[string]history.Role{sideReference: history.RoleReference, sideTip: history.RoleTip, sidePrevious: history.RoleRebuiltPrevious}

// run does the series' night and always returns it, recorded in the
// history unless the history itself failed.
func (r *seriesRun) run(ctx context.Context) (*Night, error) {
	start := time.Now()
	r.n = &Night{}
	defer func() { r.n.Took = time.Since(start) }()
	kind, source := history.GitSeries, r.conf.Repo
	if r.conf.Images != "" {
		kind, source = history.ImageSeries, r.conf.Images
	}
	err := r.db.Write(ctx, func(tx *history.Tx) error {
		s, err := tx.PutSeries(ctx, history.Series{Name: r.conf.Name, Kind: kind, Source: source, Branch: r.conf.Branch,
			Reference: r.conf.Reference, Bench: r.cfg.Bench.Select, Accel: r.cfg.Measure.Accel})
		r.n.Series = s
		return err
	})
	if err != nil {
		return r.n, err
	}
	if done, err := r.db.Night(ctx, r.n.Series.ID, r.o.Date); err == nil && done.Status != history.StatusRunning {
		r.n.Night = done
		r.n.Rows, _ = r.db.NightRows(ctx, done.ID)
		r.n.Alerts = append(r.n.Alerts, fmt.Sprintf("night %s was recorded before (%s): nothing to measure", r.o.Date, done.Status))
		// A bisection asked for since is still the next run's to do.
		r.bisectRequestedAgain(ctx)
		return r.n, nil
	}
	r.n.Night = history.Night{SeriesID: r.n.Series.ID, Date: r.o.Date, Started: start, Accel: r.cfg.Measure.Accel,
		Host: hostname(), ToolVersion: version.String()}
	err = r.measure(ctx)
	if err != nil && ctx.Err() != nil {
		return r.n, err // interrupted: the night stays running, to resume
	}
	if err != nil {
		r.fail(history.StatusInfraFailed, err)
	}
	if err := r.finish(ctx); err != nil {
		return r.n, err
	}
	if r.n.Night.Status == history.StatusMeasured || r.n.Night.Status == history.StatusInconclusive {
		r.notifyAndBisect(ctx)
	}
	if r.setup != nil && ctx.Err() == nil {
		r.bisectRequested(ctx)
	}
	r.prune()
	return r.n, nil
}

// fail records why the night failed.
func (r *seriesRun) fail(status history.NightStatus, err error) {
	r.n.Night.Status, r.n.Night.Reason, r.n.Outcome = status, err.Error(), Failure
	r.n.Alerts = append(r.n.Alerts, fmt.Sprintf("%s: %v", status, err))
	r.logf("%s: %v", status, err)
}

// measure finds the tip, builds it, boots it beside the reference and
// compares; a night that ends early says why in r.n.
func (r *seriesRun) measure(ctx context.Context) error {
	var err error
	if r.setup, err = r.o.SetupFor(&r.cfg, filepath.Join(r.dir, "runs", r.o.Date), r.conf.Reference); err != nil {
		return err
	}
	resolve := r.setup.Bench.Resolve
	prev, err := r.db.LastMeasured(ctx, r.n.Series.ID, r.o.Date)
	if err != nil && !errors.Is(err, history.ErrNotFound) {
		return err
	}
	hasPrev := err == nil
	tip, ok, err := r.tip(ctx, prev, hasPrev)
	if err != nil || !ok {
		return err
	}
	ref, err := resolve(r.conf.Reference)
	if err != nil {
		r.fail(history.StatusInfraFailed, fmt.Errorf("reference kernel: %w", err))
		return nil
	}
	r.n.Night.Tip = tip
	r.n.Night.Reference = history.Kernel{ImageSHA256: ref.SHA256, Release: ref.Release, Input: r.conf.Reference}
	if !hasPrev {
		prev = history.Night{}
	}
	inputs := []string{r.conf.Reference, tip.Input}
	rebuilt := r.rebuildPrevious(ctx, prev)
	if rebuilt != "" {
		inputs = append(inputs, rebuilt)
	}
	if err := r.store(ctx, func(tx *history.Tx) error { return r.putNight(ctx, tx, history.StatusRunning) }); err != nil {
		return err
	}
	var prevTip, prevRef [][]*benchfmt.Result
	if hasPrev && !r.cpuChanged(prev) {
		if prevTip, prevRef, err = readBoots(ctx, r.db, prev.ID); err != nil {
			return err
		}
	}
	boots, err := r.boot(ctx, inputs, r.standingReference(prev, prevRef, ref))
	if err != nil {
		return err
	}
	if len(boots[sideTip]) == 0 || len(boots[sideReference]) == 0 {
		return nil // r.boot said why
	}
	if rebuilt != "" && len(boots[sidePrevious]) > 0 {
		prevTip = boots[sidePrevious]
	}
	if err := r.judge(boots[sideReference], boots[sideTip], prevTip, prevRef, prev); err != nil {
		return err
	}
	r.nightInsight(ctx, prev, ref)
	return nil
}

// tip finds tonight's tip (and builds it): ok is false when the night ends
// here (no change, a failed build, a fetch that failed), already recorded
// in r.n.
func (r *seriesRun) tip(ctx context.Context, prev history.Night, hasPrev bool) (history.Kernel, bool, error) {
	if r.conf.Images != "" {
		return r.imageTip(ctx)
	}
	repo := &git.Repo{Dir: r.conf.Repo}
	branch := r.conf.Branch
	if branch == "" {
		branch = "HEAD"
	}
	commit, ref, fetched, err := repo.Tip(ctx, branch)
	if err != nil {
		r.fail(history.StatusInfraFailed, fmt.Errorf("tip of %s: %w", branch, err))
		return history.Kernel{}, false, nil
	}
	if fetched != "" {
		r.logf("fetched %s: tip %s is %s", fetched, ref, words.ShortHash(commit))
	}
	k := history.Kernel{Commit: commit, Subject: repo.Subject(ctx, commit)}
	if r.noChange(ctx, k) {
		return k, false, nil
	}
	if hasPrev && prev.Tip.Commit != "" {
		if ok, err := repo.IsAncestor(ctx, prev.Tip.Commit, commit); err == nil && !ok {
			r.note("branch rebased: last night's tip %s is not an ancestor of %s", words.ShortHash(prev.Tip.Commit), words.ShortHash(commit))
		}
	}
	built, err := r.build(ctx, repo, commit)
	if err != nil {
		return k, false, err
	}
	if built.Failed != "" {
		r.n.Night.Tip = k
		r.fail(history.StatusBuildFailed, errors.New(built.Failed))
		return k, false, nil
	}
	k.ImageSHA256, k.Release, k.Compiler, k.ConfigHash, k.Input = built.Image, built.Release, built.Compiler, built.Kconfig, built.Kernel
	if r.noChange(ctx, history.Kernel{ImageSHA256: k.ImageSHA256}) {
		r.n.Night.Tip = k
		return k, false, nil
	}
	return k, true, nil
}

// build builds commit in the series' worktree and build directory, both
// kept between nights so builds are incremental.
func (r *seriesRun) build(ctx context.Context, repo *git.Repo, commit string) (*kbuild.Built, error) {
	wt := filepath.Join(r.dir, "worktree")
	if err := repo.AddWorktree(ctx, wt, commit); err != nil {
		return nil, fmt.Errorf("worktree for %s: %w", words.ShortHash(commit), err)
	}
	return kbuild.BuildKernel(ctx, r.setup.Builder(), wt, filepath.Join(r.dir, "build"), commit, r.dir, r.setup.Bench.Resolve, r.log)
}

// imageTip takes the newest kernel of an images series.
func (r *seriesRun) imageTip(_ context.Context) (history.Kernel, bool, error) {
	list, err := candidates(r.conf.Images)
	if err != nil {
		r.fail(history.StatusInfraFailed, err)
		return history.Kernel{}, false, nil
	}
	newest := list[len(list)-1]
	k, err := r.setup.Bench.Resolve(newest)
	if err != nil {
		r.n.Night.Tip = history.Kernel{Input: newest}
		r.fail(history.StatusBootFailed, fmt.Errorf("newest kernel %s: %w", filepath.Base(newest), err))
		return history.Kernel{}, false, nil
	}
	tip := history.Kernel{ImageSHA256: k.SHA256, Release: k.Release, Input: newest}
	return tip, !r.noChange(context.Background(), tip), nil
}

// candidates lists the kernels of an images series in the order CI made
// them: a list file's order, or a directory's kernels by modification time
// (nightly builds often share a version string, so names do not order
// them). The newest is last.
func candidates(images string) ([]string, error) {
	st, err := os.Stat(images)
	if err != nil {
		return nil, fmt.Errorf("images %s: %w", images, err)
	}
	if !st.IsDir() {
		return bisect.ExpandImages([]string{images})
	}
	names, err := kernel.Inputs(images)
	if err != nil {
		return nil, fmt.Errorf("images %s: %w", images, err)
	}
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	for _, n := range names {
		p := filepath.Join(images, n)
		info, err := os.Lstat(p) // a link dates from when it was made
		if err != nil {
			return nil, err
		}
		cands = append(cands, cand{p, info.ModTime()})
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("images %s: no kernels yet (.deb packages, bzImage files or kernel directories)", images)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if !cands[i].mod.Equal(cands[j].mod) {
			return cands[i].mod.Before(cands[j].mod)
		}
		return bisect.VersionCompare(filepath.Base(cands[i].path), filepath.Base(cands[j].path)) < 0
	})
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.path
	}
	return out, nil
}

// noChange records a no-change night when the tip (by commit or image) was
// measured before.
func (r *seriesRun) noChange(ctx context.Context, k history.Kernel) bool {
	n, err := r.db.MeasuredTip(ctx, r.n.Series.ID, k.Commit, k.ImageSHA256)
	if err != nil || n.Date == r.o.Date {
		return false
	}
	r.n.Night.Status = history.StatusNoChange
	r.n.Night.Tip = n.Tip
	r.n.Night.Reference = n.Reference
	r.n.Night.Reason = fmt.Sprintf("the tip was measured on %s", n.Date)
	r.logf("no change: the tip (%s) was measured on %s", describe(n.Tip), n.Date)
	return true
}

func describe(k history.Kernel) string {
	if k.Commit != "" {
		return k.Commit[:min(12, len(k.Commit))]
	}
	return filepath.Base(k.Input)
}

// rebuildPrevious rebuilds the previous tip with tonight's toolchain when
// the compiler or the configuration changed, and says how in the night's
// note; it returns the rebuilt kernel ("" for none).
func (r *seriesRun) rebuildPrevious(ctx context.Context, prev history.Night) string {
	tip := r.n.Night.Tip
	if r.conf.Repo == "" || prev.Tip.Commit == "" || (prev.Tip.Compiler == tip.Compiler && prev.Tip.ConfigHash == tip.ConfigHash) {
		return ""
	}
	r.note("toolchain changed since %s: compiler %q → %q, config %s → %s%s", prev.Date, prev.Tip.Compiler, tip.Compiler,
		prev.Tip.ConfigHash, tip.ConfigHash, configDiff(prev.Tip.Input, tip.Input))
	built, err := r.build(ctx, &git.Repo{Dir: r.conf.Repo}, prev.Tip.Commit)
	if err == nil && built.Failed == "" && built.Image == prev.Tip.ImageSHA256 {
		// The toolchain change left the image as it was: its stored boots
		// stand, and booting it again would only repeat them.
		r.note("last tip %s rebuilt with tonight's toolchain to the same image %s: its stored boots stand", words.ShortHash(prev.Tip.Commit), words.ShortHash(built.Image))
		return ""
	}
	if err == nil && built.Failed == "" {
		r.note("last tip %s rebuilt with tonight's toolchain, measured as rebuilt-previous", words.ShortHash(prev.Tip.Commit))
		return built.Kernel
	}
	r.note("last tip %s did not rebuild with tonight's toolchain (%v %s): compared with its old build", words.ShortHash(prev.Tip.Commit), err, built.Failed)
	return ""
}

// configDiff shows the options that differ between two kept kernels'
// configurations (boot/config-<release> beside boot/vmlinuz-<release>).
func configDiff(before, after string) string {
	read := func(input string) map[string]string {
		m := map[string]string{}
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(input), "config-*"))
		if len(matches) == 0 {
			return nil
		}
		data, err := os.ReadFile(matches[0])
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
				m[k] = v
			} else if name, ok := strings.CutPrefix(line, "# "); ok && strings.HasSuffix(name, " is not set") {
				m[strings.TrimSuffix(name, " is not set")] = "n"
			}
		}
		return m
	}
	a, b := read(before), read(after)
	if a == nil || b == nil {
		return ""
	}
	var diffs []string
	for k, v := range b {
		if a[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s %s→%s", k, cmp.Or(a[k], "none"), v))
		}
	}
	for k, v := range a {
		if _, ok := b[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s→none", k, v))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	if len(diffs) > 20 {
		diffs = append(diffs[:20], fmt.Sprintf("… %d more", len(diffs)-20))
	}
	return "; config: " + strings.Join(diffs, ", ")
}

// cpuChanged reports whether tonight's boots emulate another CPU model
// than the night prev was measured on (a CPU profile given, changed or
// dropped), and then says so in the night's note: counts of another model
// are another instrument's, so tonight is compared with no earlier night
// (its tip with prev's, its reference with prev's), and the change-point
// pass looks only at nights on tonight's model (cpuOf). Under an auto
// that the first boot decides, the model is not known before the boots.
func (r *seriesRun) cpuChanged(prev history.Night) bool {
	ms := r.setup.Measure
	if prev.CPUModel == "" || !ms.Accel.Decided() {
		return false
	}
	now := ms.VM.CPU.QEMUModel(ms.Accel)
	if now == prev.CPUModel {
		return false
	}
	r.note("CPU changed since %s: %s → %s; tonight is compared with no earlier night, and change points are looked for among the nights on %s alone",
		prev.Date, cpuName(ms.Accel, prev.CPUModel), cpuName(ms.Accel, now), ms.VM.CPU.Label())
	return true
}

// cpuName names a CPU model by its profile: "zen2 (-cpu …)", or the model
// alone when no profile emulates it.
func cpuName(a wire.Accel, model string) string {
	if p, ok := vmrunner.CPUProfileOfModel(a, model); ok {
		return p.Label() + " (-cpu " + model + ")"
	}
	return "-cpu " + model
}

func (r *seriesRun) note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if r.n.Night.Note != "" {
		r.n.Night.Note += "; "
	}
	r.n.Night.Note += line
	r.n.Alerts = append(r.n.Alerts, line)
	r.logf("%s", line)
}

// standingReference returns the reference boots of the night prev when
// they stand for tonight's, else nil. Under icount a boot's counts depend
// only on its kernel, its measurement parameters (wire.KeyParams), the QEMU
// version and the CPU model, so stored boots of the same reference image
// with the same of each are what booting it again would give (two boots
// of one image agree within 0.03 %): booting them again would spend half
// of every night on a repetition. Under wall time, where tonight's host
// is what the reference measures, or when anything differs (a QEMU
// upgrade, a new lpmbisect, another plan), the reference boots again,
// and Verdicts.Host shows what changed.
func (r *seriesRun) standingReference(prev history.Night, prevRef [][]*benchfmt.Result, ref *kernel.Kernel) [][]*benchfmt.Result {
	ms := r.setup.Measure
	need := max(r.cfg.Measure.Boots, 1)
	if ms.Accel != wire.AccelIcount || ms.Remote != nil || prev.Reference.ImageSHA256 != ref.SHA256 || len(prevRef) < need {
		return nil
	}
	qemu, err := vmrunner.QEMUVersion(cmp.Or(ms.VM.QEMU, vmrunner.DefaultQEMU))
	if err != nil {
		return nil
	}
	params, err := ms.ParamsKey()
	if err != nil {
		return nil
	}
	want := map[string]string{wire.KeyAccel: string(wire.AccelIcount), wire.KeyImage: words.ShortHash(ref.SHA256), wire.KeyQEMU: qemu,
		wire.KeyCPUModel: ms.VM.CPU.QEMUModel(wire.AccelIcount), wire.KeyVersion: version.String(), wire.KeyParams: params}
	for _, boot := range prevRef[:need] {
		if len(boot) == 0 {
			return nil
		}
		for _, res := range boot {
			for k, v := range want {
				if v == "" || res.GetConfig(k) != v {
					return nil
				}
			}
		}
	}
	return prevRef[:need]
}

// boot boots the night's kernels (reference, tip and maybe the rebuilt
// previous tip) interleaved, the configured boots each, resuming from the
// boots an interrupted run of the night stored, and stores every boot as
// it ends. The reference boots standing (standingReference; nil for none)
// take the place of its boots and are stored as tonight's, under their
// own date. It returns each side's boots.
func (r *seriesRun) boot(ctx context.Context, inputs []string, standing [][]*benchfmt.Result) (map[string][][]*benchfmt.Result, error) {
	ms := r.setup.Measure
	h := fnv.New64a()
	fmt.Fprintf(h, "%s %s", r.conf.Name, r.o.Date)
	// The guest's insight pass in the first boot of each kernel but the
	// reference explains the mail of a change point between two nights'
	// tips (tipsInsight).
	runner, err := ms.Start(inputs, measure.RunOptions{Seed: h.Sum64(), Labels: map[string]string{wire.KeyDate: r.o.Date}, Insight: r.setup.Bench.Insight})
	if err != nil {
		r.fail(history.StatusBootFailed, err)
		return nil, nil
	}
	sides := runner.Sides
	sides[0].NoInsight = true // tipsInsight reads the tips' documents, never the reference's
	sides[1].Labels[wire.KeyCommit] = r.n.Night.Tip.Commit
	stored, err := r.db.Boots(ctx, r.n.Night.ID)
	if err != nil {
		return nil, err
	}
	for _, b := range stored {
		for side, role := range roleOf {
			if b.Role == role {
				res, err := measure.ReadResults(strings.NewReader(b.Results), "history")
				if err != nil {
					return nil, err
				}
				runner.Resume(side, [][]*benchfmt.Result{res})
				r.n.Resumed++
			}
		}
	}
	if r.n.Resumed > 0 {
		r.logf("resuming the night: %d boots were stored by an earlier run", r.n.Resumed)
	}
	if len(standing) > 0 && len(runner.Boots(sideReference)) == 0 {
		err := r.store(ctx, func(tx *history.Tx) error {
			for i, b := range standing {
				if _, err := tx.PutBoot(ctx, bootRecord(r.n.Night.ID, history.RoleReference, i+1, string(vmrunner.OK), b)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		runner.Resume(sideReference, standing)
		r.note("reference %s unchanged under icount (same image, params, QEMU %s, CPU model %s): its %d boots of %s stand",
			sides[0].Label, standing[0][0].GetConfig(wire.KeyQEMU), standing[0][0].GetConfig(wire.KeyCPUModel), len(standing), standing[0][0].GetConfig(wire.KeyDate))
	}
	var storeErr error
	runner.OnBoot = func(b measure.BootReport) {
		if len(b.Results) == 0 || storeErr != nil {
			return
		}
		r.n.Booted++
		storeErr = r.store(ctx, func(tx *history.Tx) error {
			_, err := tx.PutBoot(ctx, bootRecord(r.n.Night.ID, roleOf[b.Side.Name], b.Boot, string(b.Result.Outcome), b.Results))
			return err
		})
	}
	boots := r.cfg.Measure.Boots
	err = runner.Measure(ctx, boots)
	ms.Finish(runner)
	if storeErr != nil {
		return nil, storeErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		r.fail(history.StatusBootFailed, err)
		return nil, nil
	}
	r.keepInsight(sides)
	sum := runner.Summary()
	if len(sum.Accels) > 0 {
		r.n.Night.Accel = sum.Accels[0]
	}
	out := map[string][][]*benchfmt.Result{}
	for _, s := range sides {
		out[s.Name] = runner.Boots(s.Name)
	}
	if res := out[sideTip]; len(res) > 0 && len(res[0]) > 0 {
		r.n.Night.QEMUVersion, r.n.Night.CPUModel = res[0][0].GetConfig(wire.KeyQEMU), res[0][0].GetConfig(wire.KeyCPUModel)
	}
	return out, nil
}

// bootRecord is a boot as the history stores it: the raw results and a
// summary per benchmark.
func bootRecord(nightID int64, role history.Role, index int, outcome string, results []*benchfmt.Result) history.Boot {
	var buf bytes.Buffer
	w := benchfmt.NewWriter(&buf)
	type key struct{ bench, unit string }
	values := map[key][]float64{}
	var order []key
	for _, res := range results {
		w.Write(res)
		for _, v := range res.Values {
			k := key{res.Name.String(), v.Unit}
			if _, ok := values[k]; !ok {
				order = append(order, k)
			}
			values[k] = append(values[k], v.Value)
		}
	}
	b := history.Boot{NightID: nightID, Role: role, Index: index, Outcome: outcome, Results: buf.String()}
	for _, k := range order {
		vs := values[k]
		b.Summaries = append(b.Summaries, history.BootSummary{Benchmark: k.bench, Unit: k.unit, Median: sample.Median(vs), Samples: len(vs), Min: slices.Min(vs), Max: slices.Max(vs)})
	}
	return b
}

// readBoots reads a night's tip and reference boots back from the history.
func readBoots(ctx context.Context, db *history.DB, nightID int64) (tip, ref [][]*benchfmt.Result, err error) {
	boots, err := db.Boots(ctx, nightID)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range boots {
		res, err := measure.ReadResults(strings.NewReader(b.Results), "history")
		if err != nil {
			return nil, nil, err
		}
		switch b.Role {
		case history.RoleTip:
			tip = append(tip, res)
		case history.RoleReference:
			ref = append(ref, res)
		}
	}
	return tip, ref, nil
}

func (r *seriesRun) store(ctx context.Context, fn func(*history.Tx) error) error {
	return r.db.Write(ctx, fn)
}

func (r *seriesRun) putNight(ctx context.Context, tx *history.Tx, status history.NightStatus) error {
	n := r.n.Night
	n.Status = status
	id, err := tx.PutNight(ctx, n)
	r.n.Night.ID = id
	return err
}

// finish writes the night, its rows, the tip and the change points in one
// transaction.
func (r *seriesRun) finish(ctx context.Context) error {
	n := &r.n.Night
	n.Finished = time.Now()
	if n.Status == "" {
		n.Status = history.StatusMeasured
	}
	pass, err := r.changePoints(ctx)
	if err != nil {
		return err
	}
	err = r.store(ctx, func(tx *history.Tx) error {
		if err := r.putNight(ctx, tx, n.Status); err != nil {
			return err
		}
		if n.Status != history.StatusMeasured && n.Status != history.StatusInconclusive {
			return nil
		}
		if err := tx.SetNightRows(ctx, n.ID, r.n.Rows); err != nil {
			return err
		}
		if err := r.putInsight(ctx, tx); err != nil {
			return err
		}
		if err := tx.SetTip(ctx, r.n.Series.ID, n.Tip.Commit, n.Tip.ImageSHA256); err != nil {
			return err
		}
		return pass.store(ctx, tx, r.n.Series.ID)
	})
	r.n.Changes, r.n.Excursions = pass.changes, pass.newExcursions
	for _, e := range pass.newExcursions {
		r.n.Alerts = append(r.n.Alerts, excursionAlert(e, n.Accel))
	}
	return err
}

// excursionAlert says what a new excursion is (view.ExcursionMeaning):
// under instruction counts, which do not wander, a kernel that was
// different on that night; under wall time, a night to look at before
// believing it.
func excursionAlert(e history.Excursion, accel string) string {
	what := "the tip against the reference"
	if e.Line == history.LineHost {
		what = "the reference"
	}
	return fmt.Sprintf("excursion on %s: %s %s %+.2f%% from its neighbouring nights, back since (%s): %s",
		e.Night, e.Benchmark, e.Unit, e.DeltaPct, what, view.ExcursionMeaning(e.Line, accel))
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// compareOptions are the statistics of a night's one-look comparisons:
// the bisection judge's, so a night and the bisection of its change points
// decide alike.
func (r *seriesRun) compareOptions() compare.Options { return r.setup.Bench.Judge.Options(0) }
