package main

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// compare finds the plugin scripts/setup built under the user's cache
// directory whatever --cache-dir says; the commands that run no memory
// pass (bisect, series, nightly) neither look for it nor say anything of
// it.
func TestMemoryPluginLookup(t *testing.T) {
	user := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", user)
	var logs bytes.Buffer
	r := &invocation{File: &config.File{}, log: log.New(&logs, "", 0)}
	in, err := r.compareInsight(t.TempDir(), measure.GuestPlan{}, true)
	if err != nil || in.MemoryPlugin != "" || !strings.Contains(logs.String(), "no memory pass: no plugin at") {
		t.Fatalf("compare without a plugin: %+v, %v, log %q; want no pass, said in the log", in, err, logs.String())
	}
	built := vmrunner.DefaultMemoryPlugin(filepath.Join(user, "lpmbisect"))
	if err := os.MkdirAll(filepath.Dir(built), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(built, []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if in, err = r.compareInsight(t.TempDir(), measure.GuestPlan{}, true); err != nil || in.MemoryPlugin != built {
		t.Errorf("compare with another --cache-dir: plugin %q, %v; want %s", in.MemoryPlugin, err, built)
	}
	if err := os.Remove(built); err != nil {
		t.Fatal(err)
	}
	if in, err = r.compareInsight(t.TempDir(), measure.GuestPlan{}, false); err != nil || in.MemoryPlugin != "" || logs.Len() > 0 {
		t.Errorf("a campaign's insight: plugin %q, %v, log %q; want no pass and nothing said", in.MemoryPlugin, err, logs.String())
	}
}
