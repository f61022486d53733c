package ab

import (
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
)

// TestKeepInsight checks that the block lands where SavedInsight reads it,
// that a place it cannot be written costs a warning only, and that no
// block is none, a bad one an error.
func TestKeepInsight(t *testing.T) {
	var logged strings.Builder
	l := log.New(&logged, "", 0)
	results := filepath.Join(t.TempDir(), "results.txt")
	os.WriteFile(results, []byte("results"), 0o644)
	d := &insight.Diff{A: &insight.Side{}, B: &insight.Side{}, Notes: []string{"kept"}}
	keepInsight(results, d, l)
	if got, err := SavedInsight(results); err != nil || len(got.Notes) != 1 || got.Notes[0] != "kept" || logged.Len() > 0 {
		t.Errorf("keepInsight: read back %+v, %v, log %q; want the block, no warning", got, err, logged.String())
	}
	keepInsight(filepath.Join(results, "results.txt"), d, l) // under a file: no directory there
	if !strings.Contains(logged.String(), "warning: insight block not kept") {
		t.Errorf("keepInsight under a file: log %q; want a warning", logged.String())
	}
	keepInsight(results+".none", nil, l)
	if got, err := SavedInsight(results + ".none"); got != nil || err != nil {
		t.Errorf("keepInsight(nil), then SavedInsight = %+v, %v; want none, no error", got, err)
	}
	os.WriteFile(insight.DiffFile(results), []byte("{}"), 0o644)
	if got, err := SavedInsight(results); got != nil || err == nil {
		t.Errorf("SavedInsight(a block without sides) = %+v, %v; want an error", got, err)
	}
}
