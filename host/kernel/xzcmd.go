package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/ulikunitz/xz"
)

// XZReader returns a reader of the xz stream r decompressed (its first
// stream: what follows it is ignored, as the size trailer of a bzImage's
// payload), and a function to release it. Where the xz command (xz-utils,
// on Debian by default) is installed it does the work: a Debian 6.1
// package's 108 MB data.tar takes it about 1.3 s against some 8 s of CPU
// in the pure-Go decoder, and every first look at a .deb pays that; and
// it decodes the x86 BCJ filter that the kernel's scripts/xz_wrap.sh puts
// before LZMA2 in an xz-compressed kernel (CONFIG_KERNEL_XZ), which the
// Go decoder (github.com/ulikunitz/xz) does not implement: without the
// command such a stream fails to read with an error that names the
// filter. name, the file's, is in the errors of starting; those of
// reading are named by the callers, as for the other formats.
func XZReader(name string, r io.Reader) (io.Reader, func(), error) {
	if path, err := exec.LookPath(xzCommandName); err == nil {
		return startXZ(name, path, r)
	}
	xr, err := xz.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return xr, func() {}, nil
}

// xzCommandName is the decompressor looked up on $PATH (a variable for
// the tests of the Go fallback).
var xzCommandName = "xz"

// xzCommand is a running `xz -dc` that decompresses what it is fed.
type xzCommand struct {
	cmd    *exec.Cmd
	out    io.ReadCloser
	stderr bytes.Buffer
	done   bool
	err    error
}

func startXZ(name, path string, r io.Reader) (io.Reader, func(), error) {
	c := &xzCommand{cmd: exec.Command(path, "--decompress", "--stdout", "--single-stream", "--format=xz", "--threads=1")}
	c.cmd.Args[0] = "xz" // what it calls itself in its messages
	c.cmd.Stdin = r
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: xz: %w", name, err)
	}
	c.out = out
	if err := c.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("%s: start xz: %w", name, err)
	}
	return c, c.release, nil
}

// Read returns the decompressed bytes; at their end, xz's verdict on the
// stream: a corrupt or cut-off stream is an error, never a short file.
func (c *xzCommand) Read(p []byte) (int, error) {
	if c.done {
		return 0, c.err
	}
	n, err := c.out.Read(p)
	if err == io.EOF {
		c.done = true
		if werr := c.cmd.Wait(); werr != nil {
			c.err = fmt.Errorf("xz: %w", werr)
			if msg := strings.TrimSpace(c.stderr.String()); msg != "" {
				c.err = errors.New(msg) // xz names itself: "xz: (stdin): Unexpected end of input"
			}
			return n, c.err
		}
		c.err = io.EOF
	}
	return n, err
}

// release stops xz when the reader was left before the end of the stream
// (a refused entry, an unpack cut short) and reaps it.
func (c *xzCommand) release() {
	if c.done {
		return
	}
	c.done, c.err = true, io.ErrClosedPipe
	c.cmd.Process.Kill()
	c.out.Close()
	c.cmd.Wait()
}
