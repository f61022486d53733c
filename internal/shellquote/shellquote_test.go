package shellquote

import (
	"os/exec"
	"testing"
)

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qemu", "-append", "console=ttyS0 panic=-1"}, "qemu -append 'console=ttyS0 panic=-1'"},
		{[]string{"a'b", ""}, `'a'\''b' ''`},
		{[]string{"--min-effect", "1.5", "x.deb"}, "--min-effect 1.5 x.deb"},
		{[]string{"--bench", "lookup,controls", "/boot/vmlinuz-6.12.117+deb12"}, "--bench lookup,controls /boot/vmlinuz-6.12.117+deb12"},
		{[]string{"$HOME/k", "a;b"}, `'$HOME/k' 'a;b'`},
	} {
		if got := Join(tc.args); got != tc.want {
			t.Errorf("Join(%q) = %q; want %q", tc.args, got, tc.want)
		}
	}
	// What sh makes of it is the arguments again.
	args := []string{"it's", "$HOME", "a b", "`x`", ""}
	out, err := exec.Command("sh", "-c", `printf '%s\n' `+Join(args)).Output()
	if err != nil || string(out) != "it's\n$HOME\na b\n`x`\n\n" {
		t.Errorf("sh -c printf %s = %q, %v; want the arguments back", Join(args), out, err)
	}
}
