package wire

import "errors"

// ErrNotSupported is wrapped by every error that says a feature is missing:
// one the running kernel lacks (a guest's probe), or a format lpmbisect does
// not read (a kernel package's compression, an image's payload). The guest
// maps cilium/ebpf's ErrNotSupported to it in its notes (KeyUnsupported).
var ErrNotSupported = errors.New("not supported")

// UnsupportedError says what is missing and, for a kernel feature, from
// which Linux release it exists, like cilium/ebpf's UnsupportedFeatureError.
// It wraps ErrNotSupported.
type UnsupportedError struct {
	// Feature names what is missing: a kernel feature ("bpf_loop") or a
	// format ("bz2 compression").
	Feature string
	// MinKernel is the first Linux release that has Feature, e.g. "5.17";
	// "" for what is not a kernel feature.
	MinKernel string
	// Hint, if set, says what runs or works instead.
	Hint string
}

func (e *UnsupportedError) Error() string {
	s := e.Feature + " is not supported"
	if e.MinKernel != "" {
		s = "needs " + e.Feature + " (Linux " + e.MinKernel + ")"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Is makes errors.Is(err, ErrNotSupported) true of an *UnsupportedError.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }
