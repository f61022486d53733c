package logtail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	text := "make -C x\n  first  \n\n# marker\nsecond\nthird\n\n"
	skip := func(l string) bool { return strings.HasPrefix(l, "#") }
	if got, want := Lines(text, 2, skip), []string{"second", "third"}; !slices.Equal(got, want) {
		t.Errorf("Lines(2) = %q; want %q", got, want)
	}
	if got, want := Lines(text, 10, skip), []string{"make -C x", "first", "second", "third"}; !slices.Equal(got, want) {
		t.Errorf("Lines(10) = %q; want %q", got, want)
	}
	if got := Lines("", 3, nil); len(got) != 0 {
		t.Errorf("Lines(\"\") = %q; want none", got)
	}
}

// A log longer than the bound is read from its end only.
func TestFileReadsOnlyTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.log")
	head := strings.Repeat("an early line that must not be read\n", defaultBytes/8)
	if err := os.WriteFile(path, []byte(head+"error: the last one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Read(path, 100)
	if err != nil || len(data) != 100 || !strings.HasSuffix(string(data), "error: the last one\n") {
		t.Fatalf("Read(100) = %d bytes ending %q, %v; want the last 100", len(data), data[max(0, len(data)-20):], err)
	}
	if got := File(path, 1, nil); !slices.Equal(got, []string{"error: the last one"}) {
		t.Errorf("File(1) = %q; want the last line", got)
	}
	if got := File(filepath.Join(t.TempDir(), "missing"), 3, nil); got != nil {
		t.Errorf("File(missing) = %q; want none", got)
	}
}
