package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// TestWriteBisectionFiles checks which files a finished bisection's report
// goes to: the text to standard output and its file, every HTML page, and
// beside each page the re-check's comparison, which the page links.
func TestWriteBisectionFiles(t *testing.T) {
	rep := bisect.Report{State: &campaign.State{}, Result: &campaign.Result{}}
	recheck := &compare.Report{A: compare.SideInfo{Name: compare.SideA, Kernel: "parent 0a1b2c3d4e5f"},
		B: compare.SideInfo{Name: compare.SideB, Kernel: "culprit 1a4a0cb7985f"}, Alpha: 0.05, MinEffect: 0.01, Confidence: 0.95}
	for _, tc := range []struct {
		name    string
		recheck *compare.Report
	}{{"with a re-check", recheck}, {"without", nil}} {
		dir, other := t.TempDir(), t.TempDir()
		files := bisect.Reports{Text: filepath.Join(dir, "images-1.report.txt"),
			HTML: []string{filepath.Join(dir, "images-1.report.html"), filepath.Join(other, "mine.html")}}
		var stdout bytes.Buffer
		if err := writeBisectionFiles(&stdout, rep, files, tc.recheck, view.Meta{Command: "lpmbisect bisect"}); err != nil {
			t.Fatalf("%s: writeBisectionFiles() = %v", tc.name, err)
		}
		text, err := os.ReadFile(files.Text)
		if err != nil || !bytes.Equal(text, stdout.Bytes()) || !strings.Contains(string(text), "no result") {
			t.Errorf("%s: text report %q (%v); want what standard output got, %q", tc.name, text, err, stdout.String())
		}
		for _, page := range files.HTML {
			data, err := os.ReadFile(page)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			name := bisect.RecheckPage(page)
			_, err = os.Stat(filepath.Join(filepath.Dir(page), name))
			exists, links, want := err == nil, strings.Contains(string(data), `href="`+name+`"`), tc.recheck != nil
			if exists != want || links != want {
				t.Errorf("%s: %s beside %s: exists %v, linked %v; want %v", tc.name, name, page, exists, links, want)
			}
		}
	}
	if got, want := bisect.RecheckPage("/tmp/x/mine.html"), "mine.recheck.html"; got != want {
		t.Errorf("RecheckPage(mine.html) = %q; want %q", got, want)
	}
}
