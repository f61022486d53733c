package series

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkbuild"
	"github.com/lpmbisect/lpmbisect/wire"
)

// A fake kernel here is the benchfmt lines a boot of it measures: the fake
// make (testkbuild) copies the tree's IMAGE file to the bzImage, and
// benchMeasurer "boots" it by reading the lines back, with a wobble of
// ±0.01 % per boot, as icount's.
const lookup = "LPMTrie/op=lookup/keys=random/entries=10000"

func image(insn float64) string {
	return fmt.Sprintf("Benchmark%s 1000 %g insn/op\n", lookup, insn)
}

// benchMeasurer boots fake kernels; fail makes every boot fail.
type benchMeasurer struct {
	mu     sync.Mutex
	boots  map[string]int // by image content
	fail   bool           // every boot fails
	failOn string         // boots of kernels whose content has this fail
}

func (m *benchMeasurer) Measure(ctx context.Context, ks []campaign.Candidate, boots int) ([][]campaign.BootResults, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]campaign.BootResults, len(ks))
	if m.boots == nil {
		m.boots = map[string]int{}
	}
	for i, k := range ks {
		data, err := os.ReadFile(k.Input)
		if err != nil {
			return out, err
		}
		if m.fail || m.failOn != "" && strings.Contains(string(data), m.failOn) {
			return out, fmt.Errorf("kernel %s: %w: truncated", k.Label, measure.ErrBootFailed)
		}
		for b := 0; b < boots; b++ {
			m.boots[string(data)]++
			n := m.boots[string(data)]
			rd := benchfmt.NewReader(bytes.NewReader(data), k.Input)
			var boot campaign.BootResults
			for rd.Scan() {
				r, ok := rd.Result().(*benchfmt.Result)
				if !ok {
					continue
				}
				r = r.Clone()
				r.Values[0].Value *= 1 + 1e-4*math.Sin(float64(n))
				r.SetConfig(wire.KeyBoot, strconv.Itoa(n))
				boot = append(boot, r)
			}
			out[i] = append(out[i], boot)
		}
	}
	return out, nil
}

// fakeResolve resolves a build directory or a kept image of the fake.
func fakeResolve(in string) (*kernel.Kernel, error) {
	img := in
	if st, err := os.Stat(in); err == nil && st.IsDir() {
		img = kernel.BuildImage(in)
	}
	data, err := os.ReadFile(img)
	if err != nil || !bytes.HasPrefix(data, []byte("Benchmark")) {
		return nil, fmt.Errorf("kernel %q: %w", in, kernel.ErrNotKernel)
	}
	sum := sha256.Sum256(data)
	return &kernel.Kernel{Input: in, Image: img, Release: "6.12.0-test", SHA256: hex.EncodeToString(sum[:])}, nil
}

// repo makes a kernel tree with the fake make under git: the base, then
// five patches: docs only, a lookup regression, a patch that does not
// build, its fix (within noise of its parent), and one that undoes the
// regression. It returns the tree, the make and the base commit.
func repo(t *testing.T) (src, mk, base string) {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "T",
		"GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2026-12-01T10:00:00Z", "GIT_COMMITTER_DATE": "2026-12-01T10:00:00Z"} {
		t.Setenv(k, v)
	}
	src, mk = testkbuild.Tree(t, testkbuild.Options{Compiler: "fakecc 1", Image: image(1000), CompileError: "lpm_trie.c:342: error: implicit declaration of function key_bytes"})
	runGit(t, src, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, ".gitignore"), []byte(".*\n!.gitignore\n"), 0o644)
	runGit(t, src, "add", "-A")
	runGit(t, src, "commit", "-q", "-m", "base")
	base = strings.TrimSpace(runGit(t, src, "rev-parse", "HEAD"))
	step := func(subject string, files map[string]string, remove ...string) {
		for f, text := range files {
			os.WriteFile(filepath.Join(src, f), []byte(text), 0o644)
		}
		for _, f := range remove {
			os.Remove(filepath.Join(src, f))
		}
		runGit(t, src, "add", "-A")
		runGit(t, src, "commit", "-q", "-m", subject)
	}
	step("docs: the cost of a lookup", map[string]string{"README": "a lookup walks the trie\n"})
	step("lookup: out of line", map[string]string{"IMAGE": image(1100)})
	step("update: check key length", map[string]string{"BROKEN": "key_bytes\n"})
	step("update: fix the build", map[string]string{"IMAGE": image(1100.1)}, "BROKEN")
	step("lookup: inline again", map[string]string{"IMAGE": image(1000)})
	return src, mk, base
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

func setup(t *testing.T, mk string, m campaign.Measurer) *campaign.Setup {
	b := &campaign.Bench{
		Judge:    campaign.Judge{Alpha: 0.05, MinEffectPct: 1, Bounds: map[string]float64{lookup: 0.001}},
		Measurer: m, Resolve: fakeResolve, Boots: 2, MaxBoots: 4, Params: "test",
	}
	return &campaign.Setup{Bench: b, Build: kbuild.Options{Make: mk, Jobs: 1}}
}

// row returns the lookup row of a report.
func row(t *testing.T, rep *compare.Report) compare.Row {
	t.Helper()
	if rep == nil {
		t.Fatal("no report")
	}
	for _, r := range rep.Rows {
		if r.Benchmark == lookup && !r.Exact {
			return r
		}
	}
	t.Fatalf("no %s row", lookup)
	return compare.Row{}
}

// checkSeries checks what every run of repo's series must say.
func checkSeries(t *testing.T, res *Result) {
	t.Helper()
	var got []Status
	for _, p := range res.Patches {
		got = append(got, p.Status)
	}
	want := []Status{SameImage, Measured, BuildFailed, Measured, Measured}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses = %v; want %v", got, want)
	}
	p := res.Patches
	if r := row(t, p[1].VsParent); r.Verdict != compare.Different || math.Abs(r.DeltaPct-10) > 0.1 || r.Direction() != compare.Worse {
		t.Errorf("2/5 vs parent = %v %+.2f%%; want DIFFERENT +10%% worse", r.Verdict, r.DeltaPct)
	}
	if p[1].AgainstN != 1 || p[1].Insight == nil {
		t.Errorf("2/5 compared with %d (want 1/5, its parent, whose image is the base's), insight %v", p[1].AgainstN, p[1].Insight)
	}
	if !strings.Contains(strings.Join(p[2].LogTail, "\n"), "implicit declaration of function key_bytes") || p[2].Log == "" {
		t.Errorf("3/5 log tail = %q (log %q); want the compiler's error", p[2].LogTail, p[2].Log)
	}
	if r := row(t, p[3].VsParent); p[3].AgainstN != 2 || r.Verdict != compare.Same {
		t.Errorf("4/5 against %d: %v %+.2f%%; want SAME against 2/5, the last patch that built", p[3].AgainstN, r.Verdict, r.DeltaPct)
	}
	if r := row(t, p[4].VsParent); r.Verdict != compare.Different || r.Direction() != compare.Better {
		t.Errorf("5/5 vs parent = %v %+.2f%%; want DIFFERENT better", r.Verdict, r.DeltaPct)
	}
	if r := row(t, p[4].VsBase); r.Verdict != compare.Same {
		t.Errorf("5/5 vs base = %v %+.2f%%; want SAME", r.Verdict, r.DeltaPct)
	}
	if r := row(t, p[3].VsBase); r.Verdict != compare.Different || math.Abs(r.DeltaPct-10.01) > 0.1 {
		t.Errorf("4/5 vs base = %v %+.2f%%; want DIFFERENT +10.01%%", r.Verdict, r.DeltaPct)
	}
	if o := res.Outcome(compare.FailOnRegression); o != compare.Regression {
		t.Errorf("Outcome = %v; want regression (2/5)", o)
	}
}

func TestRangeSeries(t *testing.T) {
	src, mk, base := repo(t)
	m := &benchMeasurer{}
	state := t.TempDir()
	o := Options{Setup: setup(t, mk, m), Repo: src, Base: base, Tip: "main", StateDir: state}
	var logged bytes.Buffer
	o.Setup.Log = log.New(&logged, "", 0)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, res)
	if len(m.boots) != 3 {
		t.Errorf("booted %d images; want 3 (the base and 5/5, which share an image, 2/5 and 4/5; not the docs patch's)", len(m.boots))
	}
	if head := strings.TrimSpace(runGit(t, src, "rev-parse", "--abbrev-ref", "HEAD")); head != "main" {
		t.Errorf("the tree was left on %q; want main", head)
	}

	// The docs patch changes no file the base's build read (the fake
	// make's dependency file names IMAGE and BROKEN): it is not built.
	// Nor is 5/5, whose tree is 1/5's.
	calls, _ := os.ReadFile(filepath.Join(src, campaign.DefaultBuildDir, "calls.txt"))
	if n := strings.Count(string(calls), "bzImage"); n != 4 {
		t.Errorf("make bzImage ran %d times; want 4 (the base, 2/5, 3/5, 4/5; not the docs patch, nor 5/5, whose tree is 1/5's): %q", n, calls)
	}
	if !strings.Contains(logged.String(), "changes README, read by no build step") {
		t.Errorf("the log does not say why 1/5 was not built:\n%s", logged.String())
	}
	if b := res.Patches[0]; b.Status != SameImage {
		t.Errorf("1/5 status %v; want the base's image", b.Status)
	}

	// A rerun resumes from the state: nothing built, nothing booted.
	o.Setup = setup(t, mk, &benchMeasurer{fail: true})
	again, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("resumed: %v", err)
	}
	checkSeries(t, again)
	if calls2, _ := os.ReadFile(filepath.Join(src, campaign.DefaultBuildDir, "calls.txt")); !bytes.Equal(calls, calls2) {
		t.Errorf("the rerun built again: make calls %q, then %q", calls, calls2)
	}
}

func TestMboxSeries(t *testing.T) {
	src, mk, base := repo(t)
	mbox := filepath.Join(t.TempDir(), "series.mbox")
	os.WriteFile(mbox, []byte(runGit(t, src, "format-patch", "--stdout", "--thread", "--cover-letter", base+"..main")), 0o644)
	runGit(t, src, "checkout", "-q", base)
	m := &benchMeasurer{}
	res, err := Run(context.Background(), Options{Setup: setup(t, mk, m), Repo: src, Base: base, Mbox: mbox, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, res)
	if res.Reply == nil || !strings.HasPrefix(res.Reply.Subject, "Re: [PATCH 0/5]") || res.Reply.InReplyTo == "" {
		t.Errorf("reply = %+v; want Re: the cover letter", res.Reply)
	}
	if p := res.Patches[1]; p.Subject != "lookup: out of line" || p.MessageID == "" || p.Commit == strings.TrimSpace(runGit(t, src, "rev-parse", "main~3")) {
		t.Errorf("2/5 = %q %s (message %q); want the patch applied anew, its subject and message id", p.Subject, p.Commit, p.MessageID)
	}
	if body := runGit(t, src, "log", "-1", "--format=%B", res.Patches[4].Commit); !strings.Contains(strings.ToLower(body), strings.ToLower("Message-ID: "+res.Patches[4].MessageID)) {
		t.Errorf("5/5's commit message %q lacks its Message-ID (git am --message-id)", body)
	}
}

// The mbox of a measured range builds and boots nothing: its commits have
// the range's trees, their kernels the range's images.
func TestMboxAfterRange(t *testing.T) {
	src, mk, base := repo(t)
	state := t.TempDir()
	if _, err := Run(context.Background(), Options{Setup: setup(t, mk, &benchMeasurer{}), Repo: src, Base: base, Tip: "main", StateDir: state}); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(src, campaign.DefaultBuildDir, "calls.txt"))
	mbox := filepath.Join(t.TempDir(), "series.mbox")
	os.WriteFile(mbox, []byte(runGit(t, src, "format-patch", "--stdout", base+"..main")), 0o644)
	var logged bytes.Buffer
	again := setup(t, mk, &benchMeasurer{fail: true})
	again.Log = log.New(&logged, "", 0)
	res, err := Run(context.Background(), Options{Setup: again, Repo: src, Base: base, Mbox: mbox, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, res)
	// 3/5's tree is known not to build: said so, not as an image of none.
	if out := logged.String(); !strings.Contains(out, "did not build before") || strings.Contains(out, "was built before: image \n") {
		t.Errorf("log of the mbox run:\n%s\nwant 3/5's tree named as one that did not build", out)
	}
	wt := filepath.Join(strings.TrimSpace(runGit(t, src, "rev-parse", "--absolute-git-dir")), "lpmbisect", "series")
	if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil {
		t.Errorf("no series worktree at %s: %v", wt, err)
	}
	if _, err := os.Stat(filepath.Join(wt, campaign.DefaultBuildDir, "calls.txt")); err == nil {
		t.Errorf("the mbox's worktree built kernels; want the range's, by tree")
	}
	if calls2, _ := os.ReadFile(filepath.Join(src, campaign.DefaultBuildDir, "calls.txt")); !bytes.Equal(calls, calls2) {
		t.Errorf("the range's build directory built again")
	}
}

func TestMboxPatchDoesNotApply(t *testing.T) {
	src, mk, base := repo(t)
	// Patch 2 edits a file the base does not have.
	runGit(t, src, "checkout", "-q", "-b", "other", base)
	os.WriteFile(filepath.Join(src, "EXTRA"), []byte("one\n"), 0o644)
	runGit(t, src, "add", "EXTRA")
	runGit(t, src, "commit", "-q", "-m", "extra")
	os.WriteFile(filepath.Join(src, "EXTRA"), []byte("two\n"), 0o644)
	runGit(t, src, "commit", "-q", "-am", "extra: two")
	mbox := filepath.Join(t.TempDir(), "series.mbox")
	text := runGit(t, src, "format-patch", "--stdout", "main~5..main~4") + runGit(t, src, "format-patch", "--stdout", "other~1..other") + runGit(t, src, "format-patch", "--stdout", "main~3..main~2")
	os.WriteFile(mbox, []byte(text), 0o644)
	res, err := Run(context.Background(), Options{Setup: setup(t, mk, &benchMeasurer{}), Repo: src, Base: base, Mbox: mbox, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var got []Status
	for _, p := range res.Patches {
		got = append(got, p.Status)
	}
	if fmt.Sprint(got) != fmt.Sprint([]Status{SameImage, NotApplied, NotReached}) || !strings.Contains(res.Stopped, `patch 2/3 "extra: two" does not apply`) {
		t.Errorf("statuses %v, stopped %q; want patch 2 named as not applying, the series stopped", got, res.Stopped)
	}
	if o := res.Outcome(compare.FailOnRegression); o != compare.Inconclusive {
		t.Errorf("Outcome = %v; want inconclusive", o)
	}
}

func TestBootFailureNamed(t *testing.T) {
	src, mk, base := repo(t)
	m := &benchMeasurer{failOn: "1100.1"} // 4/5's kernel does not boot
	res, err := Run(context.Background(), Options{Setup: setup(t, mk, m), Repo: src, Base: base, Tip: "main", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Patches
	if p[3].Status != BootFailed || !strings.Contains(strings.Join(p[3].LogTail, " "), "4/5") {
		t.Errorf("4/5: %s %q; want boot-failed, named", p[3].Status, p[3].LogTail)
	}
	if r := row(t, p[4].VsParent); p[4].AgainstN != 2 || r.Verdict != compare.Different || r.Direction() != compare.Better {
		t.Errorf("5/5 against %d: %v %+.2f%%; want DIFFERENT better against 2/5, the last patch that booted", p[4].AgainstN, r.Verdict, r.DeltaPct)
	}
}

func TestBaseDoesNotBoot(t *testing.T) {
	src, mk, base := repo(t)
	_, err := Run(context.Background(), Options{Setup: setup(t, mk, &benchMeasurer{failOn: " 1000 insn/op"}), Repo: src, Base: base, Tip: "main", StateDir: t.TempDir()})
	if !errors.Is(err, ErrBaseBroken) {
		t.Errorf("Run with a base that does not boot = %v; want ErrBaseBroken", err)
	}
}
