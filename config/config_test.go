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

// The example documents every key: each setting appears in it, with a
// comment on its line.
func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Load(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, s := range Settings {
		if !f.IsDefined(s.Key) {
			t.Errorf("kernels.example.toml does not set %s", s.Key)
			continue
		}
		_, name, _ := strings.Cut(s.Key, ".")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, name+" =") })
		if i < 0 || !strings.Contains(lines[i], "#") {
			t.Errorf("kernels.example.toml: %s has no comment on its line", s.Key)
		}
	}
	for _, key := range []string{"kernel.name", "kernel.path", "kernel.src"} {
		_, name, _ := strings.Cut(key, ".")
		if !strings.Contains(string(data), name+" =") {
			t.Errorf("kernels.example.toml does not show %s", key)
		}
	}
}

func TestUnknownKeysAreReported(t *testing.T) {
	_, err := Parse("[measure]\naccel = \"tcg\"\nacel = \"kvm\"\n[stats]\nmin_efect = 2\n[wat]\nx = 1\n", "/")
	if !errors.Is(err, ErrUnknownKeys) {
		t.Fatalf("Parse with misspelt keys: error %v; want ErrUnknownKeys", err)
	}
	for _, want := range []string{"measure.acel", "stats.min_efect", "wat"} {
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

func TestFlagValues(t *testing.T) {
	f, err := Parse("[measure]\naccel = \"tcg\"\nboot_timeout = \"2m\"\n[build]\nmake_flags = [\"LLVM=1\", \"W=1\"]\nbuild_dir = \"out\"\n[stats]\nmin_effect = 2.5\n[bisect]\nreverse = true\n", "/srv")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, fv := range f.FlagValues() {
		got[fv.Flag] = fv.Values
	}
	want := map[string][]string{
		"accel": {"tcg"}, "boot-timeout": {"2m0s"}, "make-flag": {"LLVM=1", "W=1"},
		"build-dir": {"/srv/out"}, "min-effect": {"2.5"}, "reverse": {"true"},
	}
	if len(got) != len(want) {
		t.Errorf("FlagValues() = %v; want exactly %v (only keys the file sets)", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("FlagValues()[%s] = %q; want %q", k, got[k], v)
		}
	}
}
