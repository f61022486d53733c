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
