/*
 * decode_test: the plugin's block-end decoding (x86flow.h: decode_flow,
 * special_of) on instructions as the kernel's code has them, run by
 * vmrunner's TestPluginDecodesFlow. Prints one line per instruction: its
 * name, the flow kind, the direct target's offset from the instruction,
 * the special instruction it is, and its class for the cost model
 * (class_of: locked, serialising).
 */
#include <stdio.h>

#include "x86flow.h"

struct insn_case {
    const char *name;
    uint8_t bytes[16];
    size_t n;
};

int main(void)
{
    static const struct insn_case cases[] = {
        {"call rel32", {0xe8, 0x10, 0x00, 0x00, 0x00}, 5},
        {"call *%rax", {0xff, 0xd0}, 2},
        {"call *%r11", {0x41, 0xff, 0xd3}, 3},
        {"call *0x8(%rax)", {0xff, 0x50, 0x08}, 3},
        {"ret", {0xc3}, 1},
        {"ret $8", {0xc2, 0x08, 0x00}, 3},
        {"jmp rel32", {0xe9, 0xfb, 0xff, 0xff, 0xff}, 5},
        {"jmp rel8", {0xeb, 0x02}, 2},
        {"je rel8", {0x74, 0xfe}, 2},
        {"jne rel32", {0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}, 6},
        {"jmp *%rax", {0xff, 0xe0}, 2},
        {"notrack jmp *%rax", {0x3e, 0xff, 0xe0}, 3},
        {"jmp *0x10(%rip)", {0xff, 0x25, 0x10, 0x00, 0x00, 0x00}, 6},
        {"rep stos %rax", {0xf3, 0x48, 0xab}, 3},
        {"rep movsb", {0xf3, 0xa4}, 2},
        {"iretq", {0x48, 0xcf}, 2},
        {"syscall", {0x0f, 0x05}, 2},
        {"ud2", {0x0f, 0x0b}, 2},
        {"int3", {0xcc}, 1},
        {"nop", {0x90}, 1},
        {"inc %eax", {0xff, 0xc0}, 2},
        {"verw 0x0(%rip)", {0x0f, 0x00, 0x2d, 0x00, 0x00, 0x00, 0x00}, 7},
        {"lfence", {0x0f, 0xae, 0xe8}, 3},
        {"wrmsr", {0x0f, 0x30}, 2},
        {"sldt %eax", {0x0f, 0x00, 0xc0}, 3},
        {"lock cmpxchg %ecx,(%rdx)", {0xf0, 0x0f, 0xb1, 0x0a}, 4},
        {"lock incl (%rax)", {0xf0, 0xff, 0x00}, 3},
        {"xchg %rax,(%rdx)", {0x48, 0x87, 0x02}, 3},
        {"xchg %eax,%edx", {0x87, 0xc2}, 2},
        {"mfence", {0x0f, 0xae, 0xf0}, 3},
        {"cpuid", {0x0f, 0xa2}, 2},
        {"mov %rax,%cr3", {0x0f, 0x22, 0xd8}, 3},
    };
    static const char *kinds[FLOW_KINDS] = {"none", "call", "icall", "ret", "jmp", "ijmp", "jcc", "other", "rep"};
    static const char *classes[] = {"", "lock", "serial"};
    const uint64_t pc = 0xffffffff81000000ull;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t target;
        enum flow_kind k = decode_flow(cases[i].bytes, cases[i].n, pc, &target);
        enum special s = special_of(cases[i].bytes, cases[i].n);
        printf("%s|%s|%lld|%s|%s\n", cases[i].name, kinds[k], target ? (long long)(target - pc) : 0LL, special_names[s],
               classes[class_of(cases[i].bytes, cases[i].n)]);
    }
    return 0;
}
