package workloads

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// BPFSyscall is what every benchmark needs before anything else: the bpf()
// system call. A kernel built without CONFIG_BPF_SYSCALL answers ENOSYS, and
// without this check every feature probe would fail in its own confusing way.
var BPFSyscall = Requirement{
	Feature:   "the bpf() system call (CONFIG_BPF_SYSCALL)",
	MinKernel: "3.18",
	Probe:     probeBPFSyscall,
}

var bpfSyscall struct {
	once sync.Once
	err  error
}

func probeBPFSyscall() error {
	bpfSyscall.once.Do(func() {
		// BPF_MAP_CREATE with no attributes: any answer but ENOSYS (EINVAL,
		// EFAULT, EPERM) means the system call exists.
		_, _, errno := unix.Syscall(unix.SYS_BPF, 0, 0, 0)
		if errno == unix.ENOSYS {
			bpfSyscall.err = fmt.Errorf("bpf(): %w", ebpf.ErrNotSupported)
		}
	})
	return bpfSyscall.err
}

// JITState says whether the kernel compiles BPF programs to machine code:
// "on", "off" (programs run in the interpreter, much slower: results are not
// comparable with JIT results; also when CONFIG_BPF_JIT is not set) or
// "unknown". The guest writes it as a configuration line.
func JITState() string {
	b, err := os.ReadFile("/proc/sys/net/core/bpf_jit_enable")
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "off"
	case err != nil:
		return "unknown"
	}
	switch strings.TrimSpace(string(b)) {
	case "0":
		return "off"
	case "1", "2":
		return "on"
	}
	return "unknown"
}
