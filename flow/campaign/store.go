package campaign

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Store keeps the results of every kernel a bisection measured, one benchfmt
// file per kernel image, named by the image's SHA-256:
//
//	<dir>/<sha256>.txt
//
// Results carry a boot key numbered from 1 within the file. A kernel is thus
// measured once however often a bisection meets it (an endpoint, a commit
// whose build did not change the image, a resumed run), and boots added later
// extend its file. Each write replaces the file atomically, so an interrupted
// bisection never leaves half a boot behind. The directory must belong to one
// set of measurement parameters (benchmarks, accelerator, …): results measured
// differently are never comparable.
type Store struct{ Dir string }

func (s *Store) path(sha string) string { return filepath.Join(s.Dir, sha+".txt") }

// Load returns the stored results of an image; none when it was never
// measured.
func (s *Store) Load(sha string) ([]*benchfmt.Result, error) {
	f, err := os.Open(s.path(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measurement store: %w", err)
	}
	defer f.Close()
	return measure.ReadResults(f, f.Name())
}

// Boots counts the distinct boots in results.
func Boots(results []*benchfmt.Result) int {
	seen := map[string]bool{}
	for _, r := range results {
		seen[r.GetConfig(wire.KeyBoot)] = true
	}
	return len(seen)
}

// Add appends boots to an image's results: each element of boots holds the
// results of one boot, which get the next boot numbers and the extra
// configuration keys given in labels (commit, compiler, config, …). It
// returns all the image's results.
func (s *Store) Add(sha string, boots [][]*benchfmt.Result, labels map[string]string) ([]*benchfmt.Result, error) {
	old, err := s.Load(sha)
	if err != nil {
		return nil, err
	}
	next := Boots(old) + 1
	all := old
	for _, boot := range boots {
		if len(boot) == 0 {
			continue
		}
		for _, r := range boot {
			c := r.Clone()
			c.SetConfig(wire.KeyBoot, strconv.Itoa(next))
			for _, k := range sortedKeys(labels) {
				if labels[k] != "" {
					c.SetConfig(k, labels[k])
				}
			}
			for i := range c.Config {
				c.Config[i].File = true
			}
			all = append(all, c)
		}
		next++
	}
	var buf bytes.Buffer
	w := benchfmt.NewWriter(&buf)
	for _, r := range all {
		if err := w.Write(r); err != nil {
			return nil, fmt.Errorf("measurement store: %w", err)
		}
	}
	if err := cachefile.WriteBytes(s.path(sha), buf.Bytes()); err != nil {
		return nil, fmt.Errorf("measurement store: %w", err)
	}
	return all, nil
}

// insightSuffix ends the name of an image's guest insight document
// (wire.EncodeInsight, gzip-compressed JSON) beside its results.
const insightSuffix = ".insight.json.gz"

func (s *Store) insightPath(sha string) string { return filepath.Join(s.Dir, sha+insightSuffix) }

// KeepInsight keeps the insight document a guest of an image sent (its
// symbols, programs, call counts and profile), replacing an older one:
// the re-check's report reads it back (Insight).
func (s *Store) KeepInsight(sha string, doc []byte) error {
	if err := cachefile.WriteBytes(s.insightPath(sha), doc); err != nil {
		return fmt.Errorf("measurement store: insight: %w", err)
	}
	return nil
}

// Insight is the insight document kept for an image; nil, and no error,
// when none was.
func (s *Store) Insight(sha string) ([]byte, error) {
	doc, err := os.ReadFile(s.insightPath(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measurement store: insight: %w", err)
	}
	return doc, nil
}

// PruneInsight removes the insight documents of the images keep does not
// want (by SHA-256), and returns how many it removed.
func (s *Store) PruneInsight(keep func(sha string) bool) int {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		sha, ok := strings.CutSuffix(e.Name(), insightSuffix)
		if ok && !keep(sha) && os.Remove(filepath.Join(s.Dir, e.Name())) == nil {
			n++
		}
	}
	return n
}
