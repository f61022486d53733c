// Package cachefile holds the three file operations every cache of
// lpmbisect relies on to be shared safely between processes: an exclusive
// lock, a write that appears atomically, and a content hash.
package cachefile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on path, creating it if needed, and returns
// the function that releases it. flock locks belong to an open file
// description, so the lock also excludes other goroutines of this process.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// WriteAtomic creates dst (mode 0644, parent directories as needed) with
// the bytes that write produces. The file is written and synced under a
// temporary name in the same directory, then renamed, so readers never see
// a partial dst; concurrent writers of the same content are harmless (the
// last rename wins). On error nothing is left behind.
func WriteAtomic(dst string, write func(io.Writer) error) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteBytes is WriteAtomic for data already in memory.
func WriteBytes(dst string, data []byte) error {
	return WriteAtomic(dst, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SHA256 returns the hex SHA-256 of a file's contents.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
