package wire

import (
	"errors"
	"fmt"
	"testing"
)

func TestUnsupportedError(t *testing.T) {
	for _, tt := range []struct {
		err  *UnsupportedError
		want string
	}{
		{&UnsupportedError{Feature: "bpf_loop", MinKernel: "5.17"}, "needs bpf_loop (Linux 5.17)"},
		{&UnsupportedError{Feature: "BPF_F_RB_OVERWRITE", MinKernel: "6.19", Hint: "the plain ring buffer runs"}, "needs BPF_F_RB_OVERWRITE (Linux 6.19); the plain ring buffer runs"},
		{&UnsupportedError{Feature: "bz2 compression", Hint: "supported: xz, gz, zst, none"}, "bz2 compression is not supported; supported: xz, gz, zst, none"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
		if wrapped := fmt.Errorf("load: %w", tt.err); !errors.Is(wrapped, ErrNotSupported) {
			t.Errorf("errors.Is(%v, ErrNotSupported) = false; want true", wrapped)
		}
	}
	if errors.Is(errors.New("other"), ErrNotSupported) {
		t.Error("an unrelated error is ErrNotSupported")
	}
}
