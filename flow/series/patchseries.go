package series

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/logtail"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Options say which series to measure and how.
type Options struct {
	// Setup measures, judges and builds, as for a bisection.
	Setup *campaign.Setup
	// Repo is a directory of the repository.
	Repo string
	// Base is the revision the series applies to. Tip, without Mbox, is
	// the series' last commit: the series is Base..Tip.
	Base, Tip string
	// Mbox is the series as mail (git format-patch, b4 am), applied on
	// Base with git am in Worktree; Cover is b4's separate cover letter.
	Mbox, Cover string
	// Worktree is where Mbox is applied ("": <git-dir>/lpmbisect/series).
	// It is kept, with its build directory, so the next series builds
	// incrementally.
	Worktree string
	// StateDir keeps the kernels and measurements ("": <git-dir>/lpmbisect);
	// BuildDir is the build directory ("": campaign.BuildDirFor the tree).
	StateDir, BuildDir string
}

// Status is what became of a patch.
type Status string

// Statuses of a patch.
const (
	// Measured: built, booted and compared with its parent (or the last
	// patch that built and booted) and with the base.
	Measured Status = "measured"
	// SameImage: its kernel image is byte-identical to the one it is
	// compared with: nothing to boot, nothing changed.
	SameImage Status = "same-image"
	// BuildFailed: it does not build; the next patch is compared with the
	// last one that did.
	BuildFailed Status = "build-failed"
	// BootFailed: its kernel did not deliver results.
	BootFailed Status = "boot-failed"
	// NotApplied: git am could not apply it; the series stops there.
	NotApplied Status = "not-applied"
	// NotReached: a patch after one that did not apply.
	NotReached Status = "not-reached"
)

// Patch is one patch of the series and what its measurement says.
type Patch struct {
	N         int    `json:"n"`
	Commit    string `json:"commit,omitempty"`
	Subject   string `json:"subject"`
	MessageID string `json:"message_id,omitempty"`
	Status    Status `json:"status"`
	// Detail says why a patch was not measured; LogTail is the end of its
	// build log or console, Log the file.
	Detail  string   `json:"detail,omitempty"`
	LogTail []string `json:"log_tail,omitempty"`
	Log     string   `json:"log,omitempty"`
	// Image is the SHA-256 of its kernel image.
	Image        string  `json:"image,omitempty"`
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	// Against is the commit it is compared with: its parent, or the last
	// patch before it that built and booted (AgainstN, 0 for the base).
	Against  string `json:"against,omitempty"`
	AgainstN int    `json:"against_n"`
	// VsParent compares it with Against (A) and VsBase with the base (A);
	// nil when it was not measured. A SameImage patch shares Against's
	// VsBase.
	VsParent *compare.Report `json:"-"`
	VsBase   *compare.Report `json:"-"`
	// Insight is its kernel against Against's, for a patch that moved a
	// benchmark (a DIFFERENT row against its parent).
	Insight *insight.Diff `json:"-"`
}

// Moved reports whether the patch changed a benchmark against its parent.
func (p *Patch) Moved() bool {
	if p.VsParent == nil {
		return false
	}
	for _, r := range p.VsParent.Rows {
		if !r.Control && r.Verdict == compare.Different {
			return true
		}
	}
	return false
}

// Result is a measured series.
type Result struct {
	Repo        string   `json:"repo"`
	Base        string   `json:"base"`
	BaseSubject string   `json:"base_subject"`
	Patches     []*Patch `json:"patches"`
	// Stopped says why the series stopped early (a patch that does not
	// apply); "" when every patch was reached.
	Stopped string `json:"stopped,omitempty"`
	// Reply threads a reply to the series (from the mbox); nil for a git
	// range.
	Reply *Reply `json:"reply,omitempty"`
	// Environment is what the numbers depend on besides the patches.
	Environment Environment `json:"environment"`
	// State is the state file, which a rerun resumes from.
	State string `json:"state"`
}

// Environment is what a reader needs to trust or reproduce the numbers.
type Environment struct {
	Base     string `json:"base"`
	Kconfig  string `json:"kconfig,omitempty"`  // .config hash of the base build
	Compiler string `json:"compiler,omitempty"` // CONFIG_CC_VERSION_TEXT
	QEMU     string `json:"qemu,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	Accel    string `json:"accel,omitempty"`
	Boots    int    `json:"boots"` // the most boots of a kernel in a comparison
	Version  string `json:"lpmbisect"`
}

// Outcome is the series' result for an exit code, as compare's: a
// Regression when a patch regresses against its parent (by failOn),
// Inconclusive when none does but a patch stayed UNKNOWN or could not be
// measured (it did not apply, build or boot).
func (r *Result) Outcome(failOn compare.FailOn) compare.Outcome {
	out := compare.NoRegression
	for _, p := range r.Patches {
		switch {
		case p.VsParent != nil:
			switch p.VsParent.Outcome(failOn) {
			case compare.Regression:
				return compare.Regression
			case compare.Inconclusive:
				out = compare.Inconclusive
			}
		case p.Status != SameImage:
			out = compare.Inconclusive
		}
	}
	return out
}

// Errors that stop a series before its first patch.
var (
	// ErrBaseBroken: the base does not build or boot, so no patch can be
	// compared with it.
	ErrBaseBroken = errors.New("the base does not build or boot")
	// ErrEmptySeries: base..tip holds no commit.
	ErrEmptySeries = errors.New("the series is empty")
)

// run is one series being measured.
type run struct {
	o     Options
	repo  *git.Repo // where the patches are checked out and built
	st    *campaign.State
	bench *campaign.Bench
	res   *Result
	log   *log.Logger
	build string
}

// Run measures the series patch by patch: it builds the base and every
// patch, boots each kernel whose image differs from the one it is compared
// with, and compares it with that one (its parent, or the last patch that
// built and booted) and with the base. Kernels and measurements are kept
// in the state (by commit and by image), so a rerun of an interrupted
// series boots nothing twice. A git range is checked out in its own
// repository, which is left where it was; an mbox is applied in a
// worktree of its own.
func Run(ctx context.Context, o Options) (*Result, error) {
	repo, gitDir, err := git.Open(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	base, err := repo.Commit(ctx, o.Base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	r := &run{o: o, bench: o.Setup.Bench, log: o.Setup.Log,
		res: &Result{Repo: repo.Dir, Base: base, BaseSubject: repo.Subject(ctx, base)}}
	var commits []string
	if o.Mbox != "" {
		if commits, err = r.apply(ctx, repo, gitDir, base); err != nil {
			return nil, err
		}
	} else {
		if commits, err = r.rangeOf(ctx, repo, base); err != nil {
			return nil, err
		}
		defer r.restore(context.WithoutCancel(ctx), repo)()
	}
	if len(commits) == 0 && r.res.Stopped == "" {
		return nil, fmt.Errorf("%w: %s..%s (give BASE..TIP with the series on top of BASE)", ErrEmptySeries, words.ShortHash(base), o.Tip)
	}
	tip := base
	if len(commits) > 0 {
		tip = commits[len(commits)-1]
	}
	stateDir := o.StateDir
	if stateDir == "" {
		stateDir = filepath.Join(gitDir, "lpmbisect")
	}
	if r.st, err = r.bench.OpenState(stateDir, campaign.State{Kind: campaign.KindSeries, Repo: repo.Dir, Good: base, Bad: tip}); err != nil {
		return nil, err
	}
	r.res.State = r.st.Path()
	r.build = campaign.BuildDirFor(r.repo.Dir, o.BuildDir)
	if err := r.measure(ctx, base, commits); err != nil {
		return r.res, err
	}
	r.st.NoteMeasured(r.bench.MeasuredImages())
	return r.res, r.st.Save()
}

// rangeOf lists base..tip in the repository itself, which must be clean.
func (r *run) rangeOf(ctx context.Context, repo *git.Repo, base string) ([]string, error) {
	tip, err := repo.Commit(ctx, r.o.Tip)
	if err != nil {
		return nil, fmt.Errorf("tip: %w", err)
	}
	if ok, err := repo.IsAncestor(ctx, base, tip); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: base %s is not an ancestor of tip %s", ErrEmptySeries, words.ShortHash(base), words.ShortHash(tip))
	}
	if err := repo.CheckClean(ctx); err != nil {
		return nil, err
	}
	commits, err := repo.Series(ctx, base, tip)
	if err != nil {
		return nil, err
	}
	r.repo = repo
	for i, c := range commits {
		r.res.Patches = append(r.res.Patches, &Patch{N: i + 1, Commit: c, Subject: repo.Subject(ctx, c), MessageID: messageID(repo.Body(ctx, c))})
	}
	return commits, nil
}

// restore returns the repository to the branch or commit it was on.
func (r *run) restore(ctx context.Context, repo *git.Repo) func() {
	branch := repo.Branch(ctx)
	head, _ := repo.Head(ctx)
	return func() {
		now, _ := repo.Head(ctx)
		if now == head && branch == repo.Branch(ctx) {
			return
		}
		var err error
		if branch != "" {
			err = repo.CheckoutBranch(ctx, branch)
		} else {
			err = repo.Checkout(ctx, head)
		}
		if err != nil && r.log != nil {
			r.log.Printf("warning: could not return %s to where it was: %v", repo.Dir, err)
		}
	}
}

// apply applies the mbox's patches one by one on base in the series
// worktree, and returns the commits made; a patch that does not apply
// stops the series.
func (r *run) apply(ctx context.Context, repo *git.Repo, gitDir, base string) ([]string, error) {
	t, err := readThread(r.o.Mbox, r.o.Cover)
	if err != nil {
		return nil, err
	}
	reply := t.Reply()
	r.res.Reply = &reply
	wt := r.o.Worktree
	if wt == "" {
		wt = filepath.Join(gitDir, "lpmbisect", "series")
	}
	if wt, err = filepath.Abs(wt); err != nil {
		return nil, err
	}
	if err := repo.AddWorktree(ctx, wt, base); err != nil {
		return nil, fmt.Errorf("series worktree: %w", err)
	}
	r.repo = &git.Repo{Dir: wt}
	if err := r.repo.CheckClean(ctx); err != nil {
		return nil, fmt.Errorf("series worktree: %w", err)
	}
	tmp, err := os.MkdirTemp("", "lpmbisect-series-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var commits []string
	for i, m := range t.Patches {
		p := &Patch{N: i + 1, Subject: patchSubject(m.Subject), MessageID: m.MessageID}
		r.res.Patches = append(r.res.Patches, p)
		if r.res.Stopped != "" {
			p.Status = NotReached
			continue
		}
		file := filepath.Join(tmp, fmt.Sprintf("%04d.patch", i+1))
		if err := os.WriteFile(file, m.Raw, 0o644); err != nil {
			return nil, err
		}
		if err := r.repo.Am(ctx, file); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			p.Status, p.Detail = NotApplied, "does not apply"
			p.LogTail = logtail.Lines(err.Error(), 6, nil)
			r.res.Stopped = fmt.Sprintf("patch %d/%d %q does not apply on %s: the series stops there", p.N, len(t.Patches), p.Subject, words.ShortHash(base))
			continue
		}
		head, err := r.repo.Head(ctx)
		if err != nil {
			return nil, err
		}
		p.Commit = head
		commits = append(commits, head)
	}
	return commits, nil
}

// measure builds and measures the base and every commit.
func (r *run) measure(ctx context.Context, base string, commits []string) error {
	bb, err := r.kernel(ctx, base)
	if err != nil {
		return err
	}
	if bb.Failed != "" {
		return fmt.Errorf("%w: %s: %s", ErrBaseBroken, words.ShortHash(base), bb.Failed)
	}
	baseK := campaign.CandidateOf(bb, "base "+words.ShortHash(base), base)
	kernels, stop := r.builds(ctx)
	defer stop()
	// The base alone first, so that a later boot failure is the patch's.
	if _, _, _, err := r.bench.CompareKernels(ctx, baseK, baseK); err != nil {
		if ctx.Err() == nil && errors.Is(err, measure.ErrBootFailed) {
			return fmt.Errorf("%w: %s: %w", ErrBaseBroken, words.ShortHash(base), err)
		}
		return err
	}
	r.res.Environment = Environment{Base: base, Kconfig: bb.Kconfig, Compiler: bb.Compiler, Version: version.String()}
	defer r.environment(bb.Image)
	last, lastN, lastImage := baseK, 0, bb.Image
	var lastVsBase *compare.Report
	total := len(r.res.Patches)
	for i, p := range r.res.Patches {
		if p.Commit == "" {
			continue
		}
		b, err := kernels(i)
		if err != nil {
			return err
		}
		p.Against, p.AgainstN, p.BuildSeconds = last.Labels[wire.KeyCommit], lastN, b.BuildSeconds
		if b.Failed != "" {
			p.Status, p.Detail, p.Log = BuildFailed, "does not build", b.BuildLog
			p.LogTail = kbuild.LogTail(b.BuildLog, 8)
			r.logf("%d/%d %s does not build (log: %s); the next patch is compared with %s", p.N, total, words.ShortHash(p.Commit), b.BuildLog, last.Label)
			continue
		}
		p.Image = b.Image
		if b.Image == lastImage {
			// Its kernel is the one compared with: the next patch's
			// comparison with that kernel is with this patch.
			lastN = p.N
			p.Status, p.VsBase = SameImage, lastVsBase
			r.logf("%d/%d %s: image identical to %s's (sha256 %s): nothing to boot", p.N, total, words.ShortHash(p.Commit), last.Label, words.ShortHash(b.Image))
			continue
		}
		k := campaign.CandidateOf(b, fmt.Sprintf("%d/%d %s", p.N, total, words.ShortHash(p.Commit)), p.Commit)
		rep, lk, pk, err := r.bench.CompareKernels(ctx, last, k)
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, measure.ErrBootFailed) || campaign.FirstKernelFailed(err) {
				// Not the patch's kernel: the host, or the kernel that
				// booted before.
				return err
			}
			p.Status, p.Detail = BootFailed, "did not boot"
			p.LogTail = logtail.Lines(err.Error(), 8, nil)
			r.logf("%d/%d %s did not boot: %v", p.N, total, words.ShortHash(p.Commit), err)
			continue
		}
		p.Status, p.VsParent = Measured, rep
		if lastImage == bb.Image { // compared with the base's kernel already
			p.VsBase = rep
		} else if p.VsBase, _, _, err = r.bench.CompareKernels(ctx, baseK, k); err != nil {
			return fmt.Errorf("%d/%d against the base: %w", p.N, total, err)
		}
		if p.Moved() {
			p.Insight = campaign.KernelInsight(lk, pk)
		}
		r.logf("%d/%d %s: %s", p.N, total, words.ShortHash(p.Commit), describe(rep))
		last, lastN, lastImage, lastVsBase = k, p.N, b.Image, p.VsBase
	}
	return nil
}

// builds returns the kernel of each patch (by index; see kernel), built
// ahead of the boots where that is harmless: patch N+1 builds (make -j,
// one job per CPU) while patch N boots, so neither waits for the other.
// Under icount the counts do not depend on the host's load, and a fleet's
// builds run elsewhere; boots measured in wall time would be disturbed by
// a build beside them, so there each patch is built when its turn comes.
// stop ends the builds ahead (cancelling one that runs) and waits for them.
func (r *run) builds(ctx context.Context) (kernels func(i int) (*kbuild.Built, error), stop func()) {
	s := r.o.Setup
	if !(s.RemoteBuilder != nil || s.Measure == nil || s.Measure.Accel == wire.AccelIcount) {
		return func(i int) (*kbuild.Built, error) { return r.kernel(ctx, r.res.Patches[i].Commit) }, func() {}
	}
	type built struct {
		b   *kbuild.Built
		err error
	}
	ahead, cancel := context.WithCancel(ctx)
	done := make([]chan built, len(r.res.Patches))
	for i := range done {
		done[i] = make(chan built, 1)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		for i, p := range r.res.Patches {
			var b *kbuild.Built
			if err == nil && p.Commit != "" {
				b, err = r.kernel(ahead, p.Commit)
			}
			done[i] <- built{b, err}
		}
	}()
	kernels = func(i int) (*kbuild.Built, error) {
		select {
		case res := <-done[i]:
			return res.b, res.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return kernels, func() { cancel(); wg.Wait() }
}

// environment reads the accelerator, QEMU and CPU model from the base's
// stored results.
func (r *run) environment(image string) {
	results, err := r.bench.Store.Load(image)
	if err != nil || len(results) == 0 {
		return
	}
	e := &r.res.Environment
	for _, p := range r.res.Patches {
		for _, rep := range []*compare.Report{p.VsParent, p.VsBase} {
			if rep != nil {
				for _, row := range rep.Rows {
					e.Boots = max(e.Boots, row.A.Boots, row.B.Boots)
				}
			}
		}
	}
	e.Accel, e.QEMU, e.CPUModel = results[0].GetConfig(wire.KeyAccel), results[0].GetConfig(wire.KeyQEMU), results[0].GetConfig(wire.KeyCPUModel)
}

// kernel builds commit (checking it out) unless the state has it, or has
// a kernel built from the same tree: the same patches applied from an
// mbox make other commits of the same trees, and builds are reproducible.
func (r *run) kernel(ctx context.Context, commit string) (*kbuild.Built, error) {
	tree, err := r.repo.Tree(ctx, commit)
	if err != nil {
		return nil, err
	}
	byTree := filepath.Join(r.st.Dir(), "trees", tree+".json")
	b := r.st.Kernels[commit]
	if !b.Stands() {
		b = nil
		if data, err := os.ReadFile(byTree); err == nil && json.Unmarshal(data, &b) == nil && b.Stands() {
			if b.Failed != "" {
				r.logf("%s: tree %s did not build before (log: %s)", words.ShortHash(commit), words.ShortHash(tree), b.BuildLog)
			} else {
				r.logf("%s: the kernel of tree %s was built before: image %s", words.ShortHash(commit), words.ShortHash(tree), words.ShortHash(b.Image))
			}
			r.st.Kernels[commit] = b
			if err := r.st.Save(); err != nil {
				return nil, err
			}
		} else {
			b = nil
		}
	}
	if b == nil {
		if head, _ := r.repo.Head(ctx); head != commit {
			if err := r.repo.Checkout(ctx, commit); err != nil {
				return nil, err
			}
		}
		if b, err = campaign.BuildCommit(ctx, r.st, r.o.Setup.Builder(), r.repo.Dir, r.build, commit, r.bench.Resolve, r.log); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(byTree); err != nil {
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		if err := cachefile.WriteBytes(byTree, data); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (r *run) logf(format string, args ...any) {
	if r.log != nil {
		r.log.Printf(format, args...)
	}
}

// describe is a progress line's summary of a comparison.
func describe(rep *compare.Report) string {
	var parts []string
	for _, row := range rep.Rows {
		if !row.Control {
			parts = append(parts, fmt.Sprintf("%s %+.2f%% %s", row.Benchmark, row.DeltaPct, row.Verdict))
		}
	}
	return strings.Join(parts, "; ")
}

var messageIDLine = regexp.MustCompile(`(?mi)^Message-I[Dd]:\s*(<[^>]+>)\s*$`)

// messageID finds the Message-ID line git am --message-id adds to a
// commit message.
func messageID(body string) string {
	m := messageIDLine.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// patchSubject strips the [PATCH …] prefix of a mail subject, as git am
// does for the commit.
func patchSubject(s string) string {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]")
		if i < 0 {
			break
		}
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}
