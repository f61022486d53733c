// Package insight explains an A/B verdict from the kernel images
// themselves: which symbols of the code under test changed size, and whom
// the functions of interest call, in A and in B. It is what a reviewer
// runs scripts/bloat-o-meter and objdump for, put beside the numbers.
//
// # Symbols
//
// Each side's symbols come from the best source given (Input), named in
// the result (Symbols.Describe):
//
//   - an unstripped vmlinux (a build directory's): the ELF symbol table,
//     with exact sizes and nm(1)'s type letters;
//   - a Debian linux-image-<release>-dbg package: its
//     usr/lib/debug/boot/vmlinux-<release>, unpacked once into the cache;
//     its GNU build ID must equal the image payload's (ErrBuildIDMismatch);
//   - /proc/kallsyms captured from a guest (or a System.map): no sizes, so
//     each is the distance to the next symbol, as the kernel computes it,
//     which rounds up to the function alignment (trie_lookup_elem: 192
//     against 179 bytes on Debian 6.1). The KASLR offset is kallsyms'
//     _text minus the image's .text address; it is subtracted, so that
//     the addresses match the image's code.
//
// A side with none says so in one line ("no symbols: …") and the rest of
// the comparison goes on without it.
//
// # Sizes
//
// diffSizes counts as scripts/bloat-o-meter does (checked row for row and
// byte for byte against its output on the Debian 6.1 and 6.12 debug
// vmlinux files, 119137 rows): sizes of equal names after removing
// ".NUMBER" suffixes are summed, generated symbols skipped, and the rows
// sorted by delta. WriteBloatOMeter prints its format. Two differences,
// both options: by default only the code under test is counted
// (defaultSymbols: lpm_trie.c and the map syscall core, functions only,
// bloat-o-meter -t), and the __pfx_ symbols (16 bytes of padding before
// every function since Linux 6.2 with CONFIG_CALL_PADDING) are left out:
// they would add one row per function and say nothing about the code.
//
// # Calls
//
// findCalls disassembles a function from the image's own code (the
// decompressed bzImage payload, which is stripped of symbols but keeps
// its text and section headers, or the vmlinux) with
// golang.org/x/arch/x86/x86asm and resolves direct call targets through
// the symbols. __fentry__, return thunks, static-call trampolines and
// retpolines are plumbing, not callees; jumps into the function's .cold
// part are followed, jumps to another function's start are tail calls.
// This shows what symbol presence cannot: Debian 6.1 and 6.12 both keep
// longest_prefix_match.isra.0 out of line, but only 6.1's
// trie_lookup_elem calls it.
//
// What the static code cannot tell: calls made through pointers (counted
// as Indirect, not named), code patched at boot (alternatives, static
// calls, ftrace), and how often each call runs. The inference "inlined" in
// a change line only means the call went away while the function grew.
//
// # Profile
//
// The guest's profile pass (package guest, wire.ProfileDoc) samples each
// benchmark's operations with a cpu-clock perf event of its thread,
// every DefaultProfilePeriod ns of guest clock: under icount, every that
// many instructions, so the profile weighs instructions, not cycles. It
// sends instruction pointers with their callers; Side.AddProfile names
// them with the side's symbols (the KASLR offset is the guest's _text
// minus the symbols'), BPF programs by the names the guest gives their
// JITed images (bpf_prog_NAME), user space and other module code as one
// bucket each. Compare pairs the profiles by benchmark (ProfileDiff): the
// functions whose self cost per operation changed most, with their
// shares in A and B, and the caller → callee pairs. The cost per
// operation a share stands for is the profile's own clock per operation
// until Diff.AttributeTimed splits the verdict's timed centres instead:
// the pass's clock includes each sample's handling (about 3300
// instructions a sample on Debian 6.1 and 6.12, ~16 % at the default
// period), the timed samples do not.
//
// What a share cannot say: instructions run with interrupts off are
// charged to the instruction after they are enabled again (the hrtimer
// fires then), and a stretch with interrupts off longer than a period
// loses samples (counted as lost, with those the kernel's throttling
// would lose).
//
// # Payload
//
// ReadPayload decompresses a bzImage's payload (lz4 legacy frames, zstd,
// gzip, or xz: the kernel build's x86 BCJ filter is decoded by the xz
// command, kernel.XZReader) in 0.25–0.9 s for the Debian kernels, so it is
// not cached; the output is bounded by maxPayloadSize.
package insight
