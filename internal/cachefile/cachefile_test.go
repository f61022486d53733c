package cachefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestWriteAtomic(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "a", "b", "file")
	if err := WriteBytes(dst, []byte("hello")); err != nil {
		t.Fatalf("WriteBytes = %v", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "hello" {
		t.Errorf("content = %q; want hello", b)
	}
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v; want 0644", st.Mode().Perm())
	}
	boom := errors.New("boom")
	if err := WriteAtomic(dst, func(w io.Writer) error { w.Write([]byte("half")); return boom }); !errors.Is(err, boom) {
		t.Errorf("WriteAtomic(failing writer) = %v; want boom", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "hello" {
		t.Errorf("a failed write replaced the file: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("abc"), 0o644)
	got, err := SHA256(p)
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || got != want {
		t.Errorf("SHA256(abc) = %q, %v; want %q", got, err, want)
	}
}

func TestLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := Lock(p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			maxInside = max(maxInside, inside)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // others would enter here without the lock
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if maxInside != 1 {
		t.Errorf("%d holders of the lock at once; want 1", maxInside)
	}
}
