package kbuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// What stays between builds in a build directory, and when it is reused.
//
// A build directory (make O=) is configured once per configuration key: the
// base configuration (a make target by name, a file by content), the
// fragments' contents, the make flags and the compiler's version. The key
// and the hash of the .config it gave are written to stampName. The next
// build with the same key, whose .config still hashes the same (nobody
// edited it), does not configure again: no make tinyconfig, no fragment
// merge, no make olddefconfig, and make then rebuilds only the objects
// whose sources changed. kbuild itself keeps that .config in step with the
// tree: when a commit changes a Kconfig file, make bzImage runs syncconfig,
// which gives new options their defaults, as olddefconfig would.
//
// Which build directory a tree uses is campaign.BuildDirFor's rule; when
// it is reused, this file's.

// stampName is the file in a build directory that records the
// configuration key it was configured for and the hash of its .config.
const stampName = "lpmbisect-config.stamp"

// stamp is what stampName holds.
type stamp struct {
	Key    string // configKey
	Config string // ConfigInfo.Hash of .config after the last build
}

func readStamp(dir string) stamp {
	data, err := os.ReadFile(filepath.Join(dir, stampName))
	if err != nil {
		return stamp{}
	}
	var s stamp
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "key":
			s.Key = v
		case "config":
			s.Config = v
		}
	}
	return s
}

// stampConfig records that the build directory dir has the configuration
// key, with config as it is now.
func stampConfig(dir, config, key string) error {
	info, err := InspectConfig(config)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("# lpmbisect: the configuration this build directory has (host/kbuild)\nkey %s\nconfig %s\n", key, info.Hash)
	if err := os.WriteFile(filepath.Join(dir, stampName), []byte(text), 0o644); err != nil {
		return fmt.Errorf("build: record the configuration: %w", err)
	}
	return nil
}

// configKey identifies what a build directory was configured from: the
// base (by name, or a file by content), the fragments' contents, the make
// flags (ccache left out: it changes no object) and the compiler's
// version line.
func (o Options) configKey(ctx context.Context) (string, error) {
	h := sha256.New()
	if isMakeTarget(o.Base) {
		fmt.Fprintf(h, "base target %s\n", o.Base)
	} else {
		data, err := os.ReadFile(o.Base)
		if err != nil {
			return "", fmt.Errorf("build: base config: %w", err)
		}
		fmt.Fprintf(h, "base file %x\n", sha256.Sum256(data))
	}
	for _, f := range o.Fragments {
		fmt.Fprintf(h, "fragment %x\n", sha256.Sum256(f.Data))
	}
	for _, f := range o.MakeFlags {
		fmt.Fprintf(h, "flag %q\n", f)
	}
	fmt.Fprintf(h, "compiler %q\n", compilerVersion(ctx, compilerOf(o.MakeFlags)))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compilerOf is the C compiler kbuild runs for these make flags: CC=, or
// clang for LLVM=1 (LLVM=-15: clang-15; LLVM=/usr/lib/llvm/bin/: that
// directory's clang), else gcc.
func compilerOf(flags []string) string {
	cc := "gcc"
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "LLVM="); ok {
			switch {
			case v == "1":
				cc = "clang"
			case strings.HasPrefix(v, "-"):
				cc = "clang" + v
			case strings.HasSuffix(v, "/"):
				cc = v + "clang"
			}
		}
	}
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "CC="); ok {
			cc = v
		}
	}
	return cc
}

// compilerVersion is the first line of cc --version, as kbuild's
// CONFIG_CC_VERSION_TEXT has it, or what went wrong: either way the same
// compiler gives the same text.
func compilerVersion(ctx context.Context, cc string) string {
	args := strings.Fields(cc)
	if len(args) == 0 {
		return ""
	}
	out, err := exec.CommandContext(ctx, args[0], append(args[1:], "--version")...).Output()
	if err != nil {
		return "unknown: " + err.Error()
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// configured reports whether the build directory has the configuration o
// asks for (see the top of this file), and says why not in the log.
func (b *builder) configured(config, key string) bool {
	s := readStamp(b.o.Dir)
	if s.Key == "" {
		return false
	}
	if s.Key != key {
		fmt.Fprintf(b.log, "# lpmbisect: configuration changed (base, fragments, make flags or compiler): configuring again\n")
		return false
	}
	info, err := InspectConfig(config)
	if err != nil || info.Hash != s.Config {
		fmt.Fprintf(b.log, "# lpmbisect: %s changed since the last build: configuring again\n", config)
		return false
	}
	fmt.Fprintf(b.log, "# lpmbisect: configuration unchanged (config %s): not configured again\n", info.ShortHash())
	return true
}

// ccacheOff, as Options.Ccache, builds without ccache.
const ccacheOff = "off"

// withCcache returns the make flags with the compiler wrapped in ccache:
// the program given, or ccache when it is installed; unchanged when the
// flags' compiler is wrapped already or ccache is off or missing.
func withCcache(flags []string, ccache string) ([]string, string) {
	if ccache == ccacheOff {
		return flags, ""
	}
	if ccache == "" {
		p, err := exec.LookPath("ccache")
		if err != nil {
			return flags, ""
		}
		ccache = p
	}
	cc := compilerOf(flags)
	if strings.Contains(cc, "ccache") {
		return flags, ""
	}
	out := append(flags[:len(flags):len(flags)], "CC="+ccache+" "+cc)
	return out, ccache
}

// ccacheCounters are the counters of ccache --print-stats (ccache 4.7)
// that say how a build used the cache.
type ccacheCounters struct{ hits, misses int64 }

// readCcache reads ccache's counters; ok is false when it cannot.
func readCcache(ctx context.Context, ccache string) (c ccacheCounters, ok bool) {
	cmd := exec.CommandContext(ctx, ccache, "--print-stats")
	out, err := cmd.Output()
	if err != nil {
		return c, false
	}
	sc := bufio.NewScanner(io.LimitReader(bytes.NewReader(out), 1<<20))
	for sc.Scan() {
		name, val, found := strings.Cut(sc.Text(), "\t")
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if !found || err != nil {
			continue
		}
		switch name {
		case "direct_cache_hit", "preprocessed_cache_hit":
			c.hits += n
			ok = true
		case "cache_miss":
			c.misses += n
			ok = true
		}
	}
	return c, ok
}

// CcacheUse is how one build used ccache: the compilations it found in the
// cache and those it ran. Other builds sharing the cache at the same time
// count too (ccache's counters are the cache's).
type CcacheUse struct {
	Hits, Misses int64
}

// String is the build log's line: "ccache: 1530 hits, 2 misses (99.9% hit
// rate)".
func (u CcacheUse) String() string {
	rate := "no compilation"
	if n := u.Hits + u.Misses; n > 0 {
		rate = fmt.Sprintf("%.1f%% hit rate", 100*float64(u.Hits)/float64(n))
	}
	return fmt.Sprintf("ccache: %d hits, %d misses (%s)", u.Hits, u.Misses, rate)
}

func (a ccacheCounters) since(b ccacheCounters) *CcacheUse {
	return &CcacheUse{Hits: a.hits - b.hits, Misses: a.misses - b.misses}
}
