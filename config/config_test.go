package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func exampleFile(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "kernels.example.toml")
}

func TestExampleParses(t *testing.T) {
	path := exampleFile(t)
	f, err := Load(path)
	if err != nil {
		t.Fatalf("Load(kernels.example.toml) error: %v", err)
	}
	dir := filepath.Dir(path)
	if f.Measure.Accel != "icount" || f.Measure.BootTimeout.Duration != 90*time.Second || f.Stats.Alpha != 0.05 {
		t.Errorf("Load(kernels.example.toml) = accel %q, boot_timeout %v, alpha %v; want icount, 90s, 0.05", f.Measure.Accel, f.Measure.BootTimeout, f.Stats.Alpha)
	}
	if len(f.Kernels) != 3 || f.Kernels[2].Src != filepath.Join(dir, "linux") {
		t.Errorf("Load(kernels.example.toml).Kernels = %+v; want 3, the last with src %s", f.Kernels, filepath.Join(dir, "linux"))
	}
	if f.Build.Fragments[0] != "builtin" || f.Build.Base != "tinyconfig" {
		t.Errorf("fragments %v, base %q; want builtin kept as a name and tinyconfig as a make target", f.Build.Fragments, f.Build.Base)
	}
}

// The example documents every key: each appears in it, with a comment on
// its line.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, key := range Keys() {
		_, name, _ := strings.Cut(key, ".")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, name+" =") })
		if i < 0 || !strings.Contains(lines[i], "#") {
			t.Errorf("kernels.example.toml does not show %s with a comment on its line", key)
		}
	}
}

func TestUnknownKeysAreReported(t *testing.T) {
	_, err := Parse("[measure]\naccel = \"tcg\"\nacel = \"kvm\"\n[stats]\nmin_efect = 2\n[wat]\nx = 1\n", "/")
	if !errors.Is(err, ErrUnknownKeys) {
		t.Fatalf("Parse with misspelt keys: error %v; want ErrUnknownKeys", err)
	}
	for _, want := range []string{"measure.acel (did you mean measure.accel?)", "stats.min_efect (did you mean stats.min_effect?)", "wat"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse error %q does not name %s", err, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"syntax", "[measure]\naccel = = 1\n", "line 2"},
		{"type", "[measure]\nboots = \"four\"\n", "boots"},
		{"duration", "[measure]\nboot_timeout = \"ninety\"\n", "90s"},
		{"kernel without path or src", "[[kernel]]\nname = \"x\"\n", "exactly one of path"},
		{"kernel with both", "[[kernel]]\npath = \"a\"\nsrc = \"b\"\n", "exactly one of path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.text, "/")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) error = %v; want one mentioning %q", c.text, err, c.want)
			}
		})
	}
}

func TestParseOverDefaults(t *testing.T) {
	f, err := Parse("[measure]\naccel = \"tcg\"\nboot_timeout = \"2m\"\n[build]\nmake_flags = [\"LLVM=1\", \"W=1\"]\nbuild_dir = \"out\"\n[stats]\nmin_effect = 2.5\n[bisect]\nreverse = true\nimages = [\"a.deb\", \"/k/b.deb\"]\n", "/srv")
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	if f.Measure.Accel != "tcg" || f.Measure.BootTimeout.Duration != 2*time.Minute || f.Stats.MinEffect != 2.5 || !f.Bisect.Reverse {
		t.Errorf("Parse: accel %q, boot_timeout %v, min_effect %v, reverse %v; want the file's tcg, 2m, 2.5, true",
			f.Measure.Accel, f.Measure.BootTimeout, f.Stats.MinEffect, f.Bisect.Reverse)
	}
	if !slices.Equal(f.Build.MakeFlags, []string{"LLVM=1", "W=1"}) || !slices.Equal(f.Bisect.Images, []string{"/srv/a.deb", "/k/b.deb"}) {
		t.Errorf("Parse: make_flags %q, images %q; want the lists as written, relative paths under /srv", f.Build.MakeFlags, f.Bisect.Images)
	}
	if f.Build.BuildDir != "/srv/out" {
		t.Errorf("Parse: build_dir %q; want /srv/out", f.Build.BuildDir)
	}
	if f.Measure.MaxBoots != d.Measure.MaxBoots || f.Stats.Alpha != d.Stats.Alpha || f.Bench.Samples != d.Bench.Samples || f.Measure.ProgressTimeout != d.Measure.ProgressTimeout {
		t.Errorf("Parse: keys the file does not set lost their defaults: %+v", f)
	}
}

func TestSeriesChecks(t *testing.T) {
	ok := "[[series]]\nname = \"bpf-next\"\nrepo = \"src\"\nbranch = \"master\"\nreference = \"ref.deb\"\n"
	f, err := Parse(ok, "/srv")
	if err != nil || len(f.Series) != 1 || f.Series[0].Repo != "/srv/src" || f.Series[0].Reference != "/srv/ref.deb" {
		t.Fatalf("Parse(one series) = %+v, %v; want it with paths under /srv", f, err)
	}
	for _, c := range []struct{ name, text, want string }{
		{"no name", "[[series]]\nrepo = \"r\"\nreference = \"x\"\n", "name"},
		{"twice", ok + ok, "twice"},
		{"repo and images", "[[series]]\nname = \"s\"\nrepo = \"r\"\nimages = \"d\"\nreference = \"x\"\n", "exactly one of repo"},
		{"no reference", "[[series]]\nname = \"s\"\nimages = \"d\"\n", "reference"},
		{"branch of images", "[[series]]\nname = \"s\"\nimages = \"d\"\nbranch = \"m\"\nreference = \"x\"\n", "branch"},
	} {
		if _, err := Parse(c.text, "/"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) error = %v; want one mentioning %q", c.name, err, c.want)
		}
	}
}

// Fields binds each key to its value in the File: a section gives the keys
// that word their own flag, a key is given whatever its usage.
func TestFields(t *testing.T) {
	f, err := Parse("[measure]\nboot_timeout = \"2m\"\n[build]\nmake_flags = [\"W=1\"]\n", "/")
	if err != nil {
		t.Fatal(err)
	}
	byFlag := map[string]Field{}
	for _, fd := range f.Fields("measure", "bench", "build", "measure.boots") {
		byFlag[fd.Flag] = fd
	}
	if p, ok := byFlag["boot-timeout"].Ptr.(*time.Duration); !ok || *p != 2*time.Minute {
		t.Errorf("Fields: boot-timeout bound to %T; want *time.Duration holding the file's 2m", byFlag["boot-timeout"].Ptr)
	}
	if p, ok := byFlag["make-flag"].Ptr.(*[]string); !ok || !slices.Equal(*p, []string{"W=1"}) || byFlag["make-flag"].Key != "build.make_flags" {
		t.Errorf("Fields: make-flag = %+v; want build.make_flags bound to the file's list", byFlag["make-flag"])
	}
	if fd := byFlag["bench"]; fd.Key != "bench.select" || fd.Usage == "" {
		t.Errorf("Fields: bench = %+v; want bench.select with its usage", fd)
	}
	if fd := byFlag["cache-dir"]; fd.Env != "LPMBISECT_CACHE" {
		t.Errorf("Fields: cache-dir env %q; want LPMBISECT_CACHE", fd.Env)
	}
	if _, ok := byFlag["max-boots"]; ok {
		t.Errorf("Fields(measure) has max-boots, whose flag each command words itself")
	}
	if _, ok := byFlag["boots"]; !ok {
		t.Errorf("Fields(measure.boots) lacks boots")
	}
	*byFlag["accel"].Ptr.(*string) = "tcg"
	if f.Measure.Accel != "tcg" {
		t.Errorf("a value set through Fields' accel did not reach the File: %q", f.Measure.Accel)
	}
}

func TestFlagName(t *testing.T) {
	for in, want := range map[string]string{"bench.select": "bench", "build.fragments": "fragment", "measure.cache_dir": "cache-dir",
		"prefix_len": "prefix-len", "cache_dir": "cache-dir", "stats.min_effect": "min-effect", "cpus": "cpus"} {
		if got := FlagName(in); got != want {
			t.Errorf("FlagName(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestParseMinEffect(t *testing.T) {
	for _, c := range []struct {
		in   string
		pct  float64
		auto bool
	}{{"2.5", 2.5, false}, {"auto", 1, true}, {"auto:3", 3, true}} {
		if pct, auto, err := ParseMinEffect(c.in, 1); err != nil || pct != c.pct || auto != c.auto {
			t.Errorf("ParseMinEffect(%q, 1) = %v, %v, %v; want %v, %v", c.in, pct, auto, err, c.pct, c.auto)
		}
	}
	for _, in := range []string{"0", "100", "auto:x", "many"} {
		var ve *ValueError
		if _, _, err := ParseMinEffect(in, 1); !errors.As(err, &ve) || ve.Key != "stats.min_effect" || !strings.Contains(err.Error(), "auto:PCT") {
			t.Errorf("ParseMinEffect(%q) error = %v; want a ValueError of stats.min_effect", in, err)
		}
	}
}

func TestStatsCheck(t *testing.T) {
	for _, c := range []struct {
		s   Stats
		key string
	}{{Stats{Alpha: 0.05, Rule: ruleAuto}, ""}, {Stats{Alpha: 1, Rule: ruleAuto}, "stats.alpha"}, {Stats{Alpha: 0.05, Rule: "vote"}, "stats.rule"}} {
		var ve *ValueError
		err := c.s.Check()
		if (c.key == "" && err != nil) || (c.key != "" && (!errors.As(err, &ve) || ve.Key != c.key)) {
			t.Errorf("%+v.Check() = %v; want an error of %q", c.s, err, c.key)
		}
	}
	if _, err := Parse("[stats]\nrule = \"vote\"\n", "/"); err == nil || !strings.Contains(err.Error(), "stats.rule \"vote\"") {
		t.Errorf("Parse with rule vote: error %v; want one naming stats.rule", err)
	}
}

func TestBuildCheck(t *testing.T) {
	var ve *ValueError
	if err := (Build{Jobs: 0}).Check(); err != nil {
		t.Errorf("jobs 0 (one per CPU): %v; want no error", err)
	}
	if err := (Build{Jobs: -2}).Check(); !errors.As(err, &ve) || ve.Key != "build.jobs" || err.Error() != "build.jobs must not be negative" {
		t.Errorf("jobs -2: %v; want the ValueError of build.jobs", err)
	}
}

func TestBisectImages(t *testing.T) {
	for _, c := range []struct {
		name, text string
		images     int
		err        error
	}{
		{"images", "[bisect]\nimages = [\"a\", \"b\"]\n", 2, nil},
		{"kernel entries", "[[kernel]]\npath = \"a\"\n[[kernel]]\npath = \"b\"\n[[kernel]]\npath = \"c\"\n", 3, nil},
		{"repo", "[bisect]\nrepo = \"r\"\ngood = \"v1\"\nbad = \"v2\"\n[[kernel]]\npath = \"a\"\n", 0, nil},
		{"both", "[bisect]\nrepo = \"r\"\nimages = [\"a\"]\n", 0, ErrRepoAndImages},
		{"neither", "", 0, ErrNothingToBisect},
		{"no revisions", "[bisect]\nrepo = \"r\"\ngood = \"v1\"\n", 0, ErrNoRevisions},
	} {
		f, err := Parse(c.text, "/srv")
		if err != nil {
			t.Fatal(err)
		}
		images, err := f.BisectImages()
		if len(images) != c.images || !errors.Is(err, c.err) {
			t.Errorf("%s: BisectImages() = %q, %v; want %d images, %v", c.name, images, err, c.images, c.err)
		}
	}
	f, _ := Parse("[bisect]\nimages = [\"a\"]\nrecheck_boots = -1\n", "/")
	var ve *ValueError
	if _, err := f.BisectImages(); !errors.As(err, &ve) || ve.Key != "bisect.recheck_boots" {
		t.Errorf("BisectImages with recheck_boots -1: %v; want a ValueError of bisect.recheck_boots", err)
	}
}

func TestKernelInputs(t *testing.T) {
	f, err := Parse("[[kernel]]\npath = \"a.deb\"\n[[kernel]]\nsrc = \"linux\"\n[[kernel]]\npath = \"c.deb\"\n", "/k")
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	build := func(src string) (string, error) { built = append(built, src); return src + "/out", nil }
	for _, c := range []struct {
		args  []string
		n     int
		want  []string
		built int
	}{
		{[]string{"x.deb"}, 2, []string{"x.deb"}, 0},      // the line wins, whatever its count
		{nil, 1, []string{"/k/a.deb"}, 0},                 // the first n entries
		{nil, 2, []string{"/k/a.deb", "/k/linux/out"}, 1}, // a src entry built first
		{nil, 4, nil, 0}, // too few entries: none
	} {
		built = nil
		got, err := f.KernelInputs(c.args, c.n, build)
		if err != nil || !slices.Equal(got, c.want) || len(built) != c.built {
			t.Errorf("KernelInputs(%q, %d) = %q, %v, built %q; want %q, %d built", c.args, c.n, got, err, built, c.want, c.built)
		}
	}
	fail := errors.New("does not build")
	if _, err := f.KernelInputs(nil, 2, func(string) (string, error) { return "", fail }); !errors.Is(err, fail) {
		t.Errorf("KernelInputs with a failed build = %v; want its error", err)
	}
}
