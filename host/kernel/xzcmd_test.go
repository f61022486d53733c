package kernel

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// Both decoders, the xz command and the Go fallback, read a whole stream
// back and refuse a cut-off one with an error, never a short file: a
// package cut off in its data.tar.xz is refused naming the member.
func TestXZReader(t *testing.T) {
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = "lpm trie\n"[rng.IntN(9)]
	}
	stream := xzBytes(t, data)
	tarball := xzBytes(t, makeTar(t, fakeKernelTree()))
	cut := makeDeb("data.tar.xz", tarball[:len(tarball)/2])
	for _, cmd := range []string{"xz", "no-such-xz-command"} {
		if cmd == "xz" {
			if _, err := exec.LookPath("xz"); err != nil {
				t.Log("xz not installed: only the Go decoder is tested")
				continue
			}
		}
		t.Run(cmd, func(t *testing.T) {
			defer func(old string) { xzCommandName = old }(xzCommandName)
			xzCommandName = cmd
			r, release, err := XZReader("data.tar.xz", bytes.NewReader(stream))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			release()
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("read %d bytes, %v; want the %d bytes written", len(got), err, len(data))
			}
			k, err := Resolve(writeFile(t, t.TempDir(), "linux-image.deb", cut), t.TempDir())
			t.Logf("a package cut off in its data: %v", err)
			if err == nil || !strings.Contains(err.Error(), "data.tar.xz") {
				t.Errorf("a package cut off in its data: %+v, error %v; want an error naming the member", k, err)
			}
		})
	}
}

// Leaving a stream before its end (a refused entry) stops the xz command.
func TestXZCommandReleased(t *testing.T) {
	path, err := exec.LookPath("xz")
	if err != nil {
		t.Skip("xz not installed")
	}
	r, release, err := startXZ("data.tar.xz", path, bytes.NewReader(xzBytes(t, bytes.Repeat([]byte("x"), 8<<20))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	release()
	if c := r.(*xzCommand); c.cmd.ProcessState == nil {
		t.Errorf("xz still running after release")
	}
	if _, err := r.Read(make([]byte, 10)); err == nil {
		t.Errorf("read after release: no error")
	}
}
