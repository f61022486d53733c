/*
 * x86flow.h: what an x86-64 instruction does with control, decoded from
 * its bytes alone, for the memory plugin (memcount.c) and whatever else
 * models control flow on top of it (a return stack, branch predictors):
 * QEMU 7.2's plugin API has no branch callback, so a block's successor is
 * the next block that starts, and its last instruction says what kind of
 * transfer that was. Tested by memplugin/decode_test.c (vmrunner's
 * TestPluginDecodesFlow).
 */
#ifndef LPMBISECT_X86FLOW_H
#define LPMBISECT_X86FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the last instruction of a block does with control (decode_flow). */
enum flow_kind {
    FLOW_NONE,     /* no branch: the block ends for another reason (its size, a page, I/O) */
    FLOW_CALL,     /* call rel32 */
    FLOW_CALL_IND, /* call through a register or memory */
    FLOW_RET,      /* ret, ret imm16 */
    FLOW_JMP,      /* jmp rel8/rel32 */
    FLOW_JMP_IND,  /* jmp through a register or memory */
    FLOW_JCC,      /* jcc rel8/rel32, loop, jrcxz */
    FLOW_OTHER,    /* far transfers, iret, syscall, sysret, int, ud2, hlt */
    FLOW_REP,      /* a rep string instruction: its successor is itself until the count runs out */
    FLOW_KINDS
};

/* Instructions that mitigations are made of, counted by executions. */
enum special { SPECIAL_NONE, SPECIAL_VERW, SPECIAL_LFENCE, SPECIAL_WRMSR, SPECIALS };
static const char *special_names[SPECIALS] = {"", "verw", "lfence", "wrmsr"};

/* decode_flow decodes what the x86-64 instruction b (n bytes, at pc)
 * does with control, and its direct target when it has one. Legacy
 * prefixes (operand size, segment and branch hints, notrack, bnd, rep)
 * and REX are skipped. */
static enum flow_kind decode_flow(const uint8_t *b, size_t n, uint64_t pc, uint64_t *target)
{
    size_t i = 0;
    uint64_t next = pc + n;
    bool rep = false;
    *target = 0;
    while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e ||
                     b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0xf0)) {
        rep = rep || b[i] == 0xf2 || b[i] == 0xf3;
        i++;
    }
    if (i < n && (b[i] & 0xf0) == 0x40) {
        i++;
    }
    if (i >= n) {
        return FLOW_NONE;
    }
    uint8_t op = b[i];
    int32_t rel32 = n >= 4 ? (int32_t)((uint32_t)b[n - 4] | (uint32_t)b[n - 3] << 8 | (uint32_t)b[n - 2] << 16 | (uint32_t)b[n - 1] << 24) : 0;
    int8_t rel8 = (int8_t)b[n - 1];
    switch (op) {
    case 0xe8:
        *target = next + (int64_t)rel32;
        return n == i + 5 ? FLOW_CALL : FLOW_OTHER;
    case 0xe9:
        *target = next + (int64_t)rel32;
        return FLOW_JMP;
    case 0xeb:
        *target = next + (int64_t)rel8;
        return FLOW_JMP;
    case 0xc3:
    case 0xc2:
        return FLOW_RET;
    case 0xe0:
    case 0xe1:
    case 0xe2:
    case 0xe3:
        *target = next + (int64_t)rel8;
        return FLOW_JCC;
    case 0xff:
        if (i + 1 < n) {
            switch ((b[i + 1] >> 3) & 7) {
            case 2:
                return FLOW_CALL_IND;
            case 4:
                return FLOW_JMP_IND;
            case 3:
            case 5:
                return FLOW_OTHER; /* far call, far jmp */
            }
        }
        return FLOW_NONE;
    case 0xca:
    case 0xcb:
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
    case 0xf4:
    case 0x9a:
    case 0xea:
        return FLOW_OTHER;
    case 0x0f:
        if (i + 1 >= n) {
            return FLOW_NONE;
        }
        if (b[i + 1] >= 0x80 && b[i + 1] <= 0x8f) {
            *target = next + (int64_t)rel32;
            return FLOW_JCC;
        }
        switch (b[i + 1]) {
        case 0x05: /* syscall */
        case 0x07: /* sysret */
        case 0x0b: /* ud2 */
        case 0x34: /* sysenter */
        case 0x35: /* sysexit */
            return FLOW_OTHER;
        }
        return FLOW_NONE;
    }
    if (op >= 0x70 && op <= 0x7f) {
        *target = next + (int64_t)rel8;
        return FLOW_JCC;
    }
    if (rep && ((op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) || (op >= 0x6c && op <= 0x6f))) {
        *target = pc; /* QEMU runs each iteration as a block of its own */
        return FLOW_REP;
    }
    return FLOW_NONE;
}

/* special_of tells the mitigations' instructions: VERW (0f 00 /5, the
 * kernel's CLEAR_CPU_BUFFERS), LFENCE (0f ae e8), WRMSR (0f 30: IBPB and
 * SPEC_CTRL writes among others; the MSR is a register the 7.2 API cannot
 * read). */
static enum special special_of(const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && (b[i] == 0x66 || b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65)) {
        i++;
    }
    if (i < n && (b[i] & 0xf0) == 0x40) {
        i++;
    }
    if (i + 1 >= n || b[i] != 0x0f) {
        return SPECIAL_NONE;
    }
    if (b[i + 1] == 0x00 && i + 2 < n && ((b[i + 2] >> 3) & 7) == 5) {
        return SPECIAL_VERW;
    }
    if (b[i + 1] == 0xae && i + 2 < n && b[i + 2] == 0xe8) {
        return SPECIAL_LFENCE;
    }
    if (b[i + 1] == 0x30) {
        return SPECIAL_WRMSR;
    }
    return SPECIAL_NONE;
}

/* What an instruction costs beyond its place in the stream, for the cost
 * model: a locked read-modify-write (a LOCK prefix, or XCHG with a memory
 * operand, which is locked without one), or an instruction that waits for
 * all before it to complete (LFENCE, MFENCE, CPUID, WRMSR, IRET, a write
 * to a control register; and VERW, which with the microcode of the
 * MDS-era mitigations clears the CPU's buffers). */
enum insn_class { CLASS_NONE, CLASS_LOCK, CLASS_SERIAL };

static enum insn_class class_of(const uint8_t *b, size_t n)
{
    size_t i = 0;
    bool lock = false;
    while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e ||
                     b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0xf0)) {
        lock = lock || b[i] == 0xf0;
        i++;
    }
    if (lock) {
        return CLASS_LOCK;
    }
    if (i < n && (b[i] & 0xf0) == 0x40) {
        i++;
    }
    if (i >= n) {
        return CLASS_NONE;
    }
    if ((b[i] == 0x86 || b[i] == 0x87) && i + 1 < n && (b[i + 1] >> 6) != 3) {
        return CLASS_LOCK;
    }
    if (b[i] == 0xcf) {
        return CLASS_SERIAL; /* iret */
    }
    if (b[i] != 0x0f || i + 1 >= n) {
        return CLASS_NONE;
    }
    if (b[i + 1] == 0x00 && i + 2 < n && ((b[i + 2] >> 3) & 7) == 5) {
        return CLASS_SERIAL; /* verw */
    }
    switch (b[i + 1]) {
    case 0xa2: /* cpuid */
    case 0x30: /* wrmsr */
    case 0x22: /* mov to a control register */
        return CLASS_SERIAL;
    case 0xae:
        if (i + 2 < n && (b[i + 2] == 0xe8 || b[i + 2] == 0xf0)) {
            return CLASS_SERIAL; /* lfence, mfence */
        }
    }
    return CLASS_NONE;
}

#endif
