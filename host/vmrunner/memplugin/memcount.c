/*
 * memcount: lpmbisect's QEMU TCG plugin. It models, per vCPU, a
 * set-associative L1 data cache, L1 instruction cache, a unified last
 * level cache and a data TLB, all LRU, and counts their accesses and
 * misses while the guest asks it to, writing one record per counted
 * segment to a file the host reads (docs/memory.md).
 *
 * Built against include/qemu/qemu-plugin.h of Debian's QEMU 7.2 source
 * package (QEMU_PLUGIN_VERSION 1) by scripts/setup.
 *
 * The guest asks with marker instructions: `mov $imm32, %reg` with
 * imm32 = MARK_BASE | code, recognised by their bytes when a block is
 * translated (opcode B8+r, optionally REX.B 41, or C7 C0+r with REX).
 * The BPF JIT emits exactly that for a BPF `r1 = imm` of a positive
 * 32-bit constant, so a BPF program brackets its timed bpf_loop with
 * WINDOW_START/WINDOW_STOP; the guest's user space (Go assembly) opens
 * and closes segments around the operations of one benchmark.
 *
 *   ARM (3)     instrument from now on: the plugin resets, QEMU flushes
 *               its code cache, every block is translated again with
 *               memory and instruction callbacks (until then only the
 *               markers cost anything)
 *   BEGIN (4)   open a segment: counting windows add to it
 *   START (1)   a window opens (the BPF program, after its first clock)
 *   STOP (2)    the window closes (after bpf_loop returns)
 *   END (5)     close the segment: its record is written
 *   DISARM (6)  stop counting and instrumenting new blocks; no reset:
 *               a flush then would free the memory callbacks' arrays
 *               that QEMU 7.2 may still point at (CPUState.plugin_mem_cbs
 *               is not cleared on every exit from a block, upstream's
 *               "accel/tcg: Clear plugin_mem_cbs on TB exit" in 9.0), and
 *               the next helper's memory access in the guest aborts QEMU
 *               in qemu_plugin_vcpu_mem_cb. The blocks translated while
 *               armed keep their callbacks, which return at once, until
 *               QEMU exits. ARM is the one reset: before it no block has
 *               a memory callback, so its flush frees none.
 *
 * Caches are indexed and tagged by guest physical address when QEMU
 * gives one (RAM), else by virtual address; instruction fetches by
 * virtual address (the 7.2 API has no physical address for them); the
 * data TLB by virtual page number. An access that crosses a line
 * touches both lines. Nothing is prefetched.
 *
 * Inside the same windows it also counts what the exact profile needs
 * (docs/insight.md, "Exact profile"): the executions of every
 * instruction, by address (the host names them with the kernel's
 * symbols), the calls by call site and target, the executions of a few
 * instructions mitigations are made of (VERW, LFENCE, WRMSR), and the
 * control transfers by kind. Control flow is decoded from the last
 * instruction of each block when it is translated (decode_flow: call,
 * indirect call, return, jump, indirect jump, conditional jump, other,
 * a rep string instruction (each of whose iterations QEMU runs as a block),
 * or none, with its fall-through and direct target), and resolved when
 * the next block starts (resolve_flow): QEMU 7.2's plugin API has no
 * branch callback, so the successor of a block is the next block that
 * executes. A successor that is neither the fall-through nor the direct
 * target is an interrupt or exception taken between the two blocks.
 * Plugin arguments (all
 * optional but outfile):
 *   outfile=PATH  l1d=SIZE:WAYS  l1i=SIZE:WAYS  llc=SIZE:WAYS (SIZE may end in K or M)
 *   dtlb=ENTRIES:WAYS  line=BYTES  page=BYTES  pcs=N (QEMU splits its -plugin argument at commas)
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <qemu-plugin.h>

#include "x86flow.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_BASE 0x4c504d00u /* "LPM" */
enum mark { WINDOW_START = 1, WINDOW_STOP, ARM, BEGIN, END, DISARM, MARK_MAX };

#define MAX_VCPUS 64
#define MAX_SEGMENTS 4096
/* Instructions with memory accesses tracked for attribution. */
#define PC_SLOTS (1u << 18)
/* The pc of the slot of every instruction that found no room. */
#define PC_OVERFLOW UINT64_MAX
/* Call edges (call site, target) tracked per segment. */
#define EDGE_SLOTS (1u << 16)


struct cache {
    const char *name;
    uint64_t size, ways, sets, shift; /* shift: log2 of the line (or page) */
    uint64_t *tags;                   /* sets * ways; 0: invalid */
    uint64_t *stamps;
    uint64_t clock;
    uint64_t accesses, misses;
};

struct pcstat {
    uint64_t pc; /* 0: free */
    uint64_t accesses, l1d, llc, dtlb;
    uint64_t execs; /* executions inside the windows */
    /* Set when the instruction is translated (again): its length, and,
     * as the last of a block, its flow kind and direct target. */
    uint64_t target;
    uint8_t size, kind, special;
};

struct vcpu {
    struct cache l1d, l1i, llc, dtlb;
    bool counting; /* inside a window of an open segment */
    /* The last instruction of the block that ran last, inside a window,
     * until the next block starts and resolves it (resolve_flow). */
    struct pcstat *pending;
};

struct edge {
    uint64_t site, target; /* site 0: free */
    uint64_t count;
};

/* Control transfers of a segment, by kind (FLOW_*), with the conditional
 * jumps taken and the successors that were neither fall-through nor
 * target (interrupts and exceptions). */
struct flows {
    uint64_t kinds[FLOW_KINDS];
    uint64_t taken, diverted;
};

static qemu_plugin_id_t plugin_id;
static struct vcpu vcpus[MAX_VCPUS];
static struct pcstat pcs[PC_SLOTS + 1]; /* the last: every pc that did not fit */
static struct edge edges[EDGE_SLOTS + 1]; /* the last: every edge that did not fit */
static struct flows flows;
static unsigned pcs_out = 64;
static FILE *out;
static bool armed, disarmed, in_segment;
static uint64_t segments, windows, insns, marks[MARK_MAX];
static uint64_t cfg_l1d[2] = {48 * 1024, 12}, cfg_l1i[2] = {32 * 1024, 8},
                cfg_llc[2] = {2 * 1024 * 1024, 16}, cfg_dtlb[2] = {64, 4};
static uint64_t line_size = 64, page_size = 4096;
/* Host time spent armed: wall (CLOCK_MONOTONIC) and the vCPU thread's CPU. */
static uint64_t armed_at_wall, armed_at_cpu, armed_wall, armed_cpu;

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int log2u(uint64_t v)
{
    int n = 0;
    while (v > 1) {
        if (v & 1) {
            return -1;
        }
        v >>= 1;
        n++;
    }
    return n;
}

static bool cache_init(struct cache *c, const char *name, uint64_t units, uint64_t ways, uint64_t unit)
{
    int shift = log2u(unit);
    c->name = name;
    c->size = units;
    c->ways = ways;
    if (ways == 0 || shift < 0 || units % ways != 0) {
        return false;
    }
    c->sets = units / ways;
    if (c->sets == 0 || log2u(c->sets) < 0) {
        return false;
    }
    c->shift = shift;
    c->tags = calloc(c->sets * ways, sizeof(uint64_t));
    c->stamps = calloc(c->sets * ways, sizeof(uint64_t));
    return c->tags && c->stamps;
}

/* cache_access looks addr up, fills it on a miss (evicting the least
 * recently used way) and reports whether it missed. */
static bool cache_access(struct cache *c, uint64_t addr)
{
    uint64_t blk = addr >> c->shift;
    uint64_t set = blk & (c->sets - 1);
    uint64_t tag = blk + 1; /* never 0 */
    uint64_t *tags = c->tags + set * c->ways, *stamps = c->stamps + set * c->ways;
    uint64_t victim = 0;
    c->accesses++;
    c->clock++;
    for (uint64_t w = 0; w < c->ways; w++) {
        if (tags[w] == tag) {
            stamps[w] = c->clock;
            return false;
        }
        if (stamps[w] < stamps[victim]) {
            victim = w;
        }
    }
    c->misses++;
    tags[victim] = tag;
    stamps[victim] = c->clock;
    return true;
}

static struct vcpu *vcpu_of(unsigned int i)
{
    return &vcpus[i < MAX_VCPUS ? i : MAX_VCPUS - 1];
}

static struct pcstat *pcstat_of(uint64_t pc)
{
    uint64_t h = (pc * 0x9e3779b97f4a7c15ull) >> 46;
    for (unsigned probe = 0; probe < 256; probe++) {
        struct pcstat *p = &pcs[(h + probe) & (PC_SLOTS - 1)];
        if (p->pc == pc) {
            return p;
        }
        if (p->pc == 0) {
            p->pc = pc;
            return p;
        }
    }
    pcs[PC_SLOTS].pc = PC_OVERFLOW;
    return &pcs[PC_SLOTS];
}

static void data_line(struct vcpu *v, struct pcstat *p, uint64_t addr)
{
    if (cache_access(&v->l1d, addr)) {
        p->l1d++;
        if (cache_access(&v->llc, addr)) {
            p->llc++;
        }
    }
}

static void mem_cb(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    struct pcstat *p = udata;
    struct qemu_plugin_hwaddr *hw;
    uint64_t addr = vaddr, size;
    if (!v->counting) {
        return;
    }
    p->accesses++;
    if (cache_access(&v->dtlb, vaddr)) {
        p->dtlb++;
    }
    hw = qemu_plugin_get_hwaddr(info, vaddr);
    if (hw && qemu_plugin_hwaddr_is_io(hw)) {
        return; /* device memory is not cached */
    }
    if (hw) {
        addr = qemu_plugin_hwaddr_phys_addr(hw);
    }
    size = 1ull << qemu_plugin_mem_size_shift(info);
    data_line(v, p, addr);
    if ((addr & (line_size - 1)) + size > line_size) {
        data_line(v, p, addr + size - 1);
    }
}

static void count_insn(struct vcpu *v, uint64_t pc)
{
    insns++;
    if (cache_access(&v->l1i, pc)) {
        /* instruction lines by virtual address, kept apart from physical data lines */
        cache_access(&v->llc, pc | (1ull << 63));
    }
}

static void insn_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    struct pcstat *p = udata;
    if (!v->counting) {
        return;
    }
    p->execs++;
    count_insn(v, p->pc);
}

/* insn_untracked_cb counts an instruction that found no room in pcs. */
static void insn_untracked_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    if (!v->counting) {
        return;
    }
    pcs[PC_SLOTS].execs++;
    count_insn(v, (uint64_t)(uintptr_t)udata);
}

static void edge_add(uint64_t site, uint64_t target)
{
    uint64_t h = ((site ^ (target * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 48;
    for (unsigned probe = 0; probe < 64; probe++) {
        struct edge *e = &edges[(h + probe) & (EDGE_SLOTS - 1)];
        if (e->site == site && e->target == target) {
            e->count++;
            return;
        }
        if (e->site == 0) {
            e->site = site, e->target = target, e->count = 1;
            return;
        }
    }
    edges[EDGE_SLOTS].site = edges[EDGE_SLOTS].target = PC_OVERFLOW;
    edges[EDGE_SLOTS].count++;
}

/* resolve_flow counts the transfer of the block-ending instruction p now
 * that its successor, the block starting at next, is known. A direct
 * call counts towards its target even when an interrupt came between
 * (the call was made); an indirect one towards its successor, which is
 * the interrupt's entry in that rare case. */
static void resolve_flow(struct pcstat *p, uint64_t next)
{
    uint64_t fall = p->pc + p->size;
    flows.kinds[p->kind]++;
    switch (p->kind) {
    case FLOW_CALL:
        edge_add(p->pc, p->target);
        flows.diverted += next != p->target;
        break;
    case FLOW_CALL_IND:
        edge_add(p->pc, next);
        break;
    case FLOW_JMP:
        flows.diverted += next != p->target;
        break;
    case FLOW_JCC:
        if (next == p->target) {
            flows.taken++;
        } else if (next != fall) {
            flows.diverted++;
        }
        break;
    case FLOW_NONE:
        flows.diverted += next != fall;
        break;
    case FLOW_REP:
        flows.diverted += next != fall && next != p->pc;
        break;
    default:
        break;
    }
}

/* flow_cb runs before a block's last instruction: inside a window, the
 * instruction waits for the next block to resolve it. */
static void flow_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    if (v->counting) {
        v->pending = udata;
    }
}

/* block_cb runs when a block starts, at pc udata. */
static void block_cb(unsigned int vcpu, void *udata)
{
    struct vcpu *v = vcpu_of(vcpu);
    if (v->pending) {
        resolve_flow(v->pending, (uint64_t)(uintptr_t)udata);
        v->pending = NULL;
    }
}

/* write_profile writes the segment's exact profile: its transfers by
 * kind, the mitigations' instructions, every instruction executed with
 * its count, every call edge; and clears the edges and flows. */
static void write_profile(void)
{
    uint64_t special[SPECIALS] = {0};
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        if (pcs[i].execs) {
            special[pcs[i].special] += pcs[i].execs;
        }
    }
    fprintf(out, "flow %" PRIu64 " call %" PRIu64 " icall %" PRIu64 " ret %" PRIu64 " jmp %" PRIu64 " ijmp %" PRIu64
            " jcc %" PRIu64 " taken %" PRIu64 " other %" PRIu64 " rep %" PRIu64 " none %" PRIu64 " diverted %" PRIu64 "\n",
            segments, flows.kinds[FLOW_CALL], flows.kinds[FLOW_CALL_IND], flows.kinds[FLOW_RET], flows.kinds[FLOW_JMP],
            flows.kinds[FLOW_JMP_IND], flows.kinds[FLOW_JCC], flows.taken, flows.kinds[FLOW_OTHER], flows.kinds[FLOW_REP], flows.kinds[FLOW_NONE],
            flows.diverted);
    fprintf(out, "special %" PRIu64, segments);
    for (int k = 1; k < SPECIALS; k++) {
        fprintf(out, " %s %" PRIu64, special_names[k], special[k]);
    }
    fprintf(out, "\n");
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        if (pcs[i].execs) {
            fprintf(out, "exec %" PRIu64 " %" PRIx64 " %" PRIu64 "\n", segments, pcs[i].pc, pcs[i].execs);
        }
    }
    for (unsigned i = 0; i <= EDGE_SLOTS; i++) {
        if (edges[i].count) {
            fprintf(out, "call %" PRIu64 " %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", segments, edges[i].site, edges[i].target,
                    edges[i].count);
        }
        edges[i].site = edges[i].target = edges[i].count = 0;
    }
    memset(&flows, 0, sizeof(flows));
}

static void write_segment(void)
{
    struct cache t[4] = {0};
    struct pcstat *top[256];
    unsigned ntop = 0, n = pcs_out < 256 ? pcs_out : 256;
    for (int i = 0; i < MAX_VCPUS; i++) {
        struct cache *cs[4] = {&vcpus[i].l1d, &vcpus[i].l1i, &vcpus[i].llc, &vcpus[i].dtlb};
        for (int j = 0; j < 4; j++) {
            t[j].accesses += cs[j]->accesses;
            t[j].misses += cs[j]->misses;
            cs[j]->accesses = cs[j]->misses = 0;
        }
    }
    segments++;
    if (segments > MAX_SEGMENTS || !out) {
        return;
    }
    fprintf(out, "segment %" PRIu64 " windows %" PRIu64 " insns %" PRIu64
            " l1d %" PRIu64 " %" PRIu64 " l1i %" PRIu64 " %" PRIu64
            " llc %" PRIu64 " %" PRIu64 " dtlb %" PRIu64 " %" PRIu64 "\n",
            segments, windows, insns, t[0].accesses, t[0].misses, t[1].accesses, t[1].misses,
            t[2].accesses, t[2].misses, t[3].accesses, t[3].misses);
    /* The n instructions with the most misses, by insertion into a sorted array. */
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        struct pcstat *p = &pcs[i];
        uint64_t m = p->l1d + p->llc + p->dtlb;
        unsigned k;
        if (p->accesses == 0) {
            continue;
        }
        if (ntop == n && m <= top[n - 1]->l1d + top[n - 1]->llc + top[n - 1]->dtlb) {
            continue;
        }
        k = ntop < n ? ntop++ : n - 1;
        while (k > 0 && m > top[k - 1]->l1d + top[k - 1]->llc + top[k - 1]->dtlb) {
            top[k] = top[k - 1];
            k--;
        }
        top[k] = p;
    }
    for (unsigned i = 0; i < ntop; i++) {
        fprintf(out, "pc %" PRIu64 " %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", segments,
                top[i]->pc, top[i]->accesses, top[i]->l1d, top[i]->llc, top[i]->dtlb);
    }
    write_profile();
    for (unsigned i = 0; i <= PC_SLOTS; i++) {
        pcs[i].accesses = pcs[i].l1d = pcs[i].llc = pcs[i].dtlb = pcs[i].execs = 0;
    }
    fflush(out);
}

static void register_all(qemu_plugin_id_t id);

static void reset_done(qemu_plugin_id_t id)
{
    register_all(id);
}

static void mark_cb(unsigned int vcpu, void *udata)
{
    enum mark m = (enum mark)(uintptr_t)udata;
    struct vcpu *v = vcpu_of(vcpu);
    marks[m]++;
    switch (m) {
    case WINDOW_START:
        if (in_segment && armed) {
            v->counting = true;
            windows++;
        }
        break;
    case WINDOW_STOP:
        v->counting = false;
        break;
    case ARM:
        /* Once per boot: a second ARM would flush blocks that have
         * memory callbacks (see DISARM above). */
        if (!armed && !disarmed) {
            armed = true;
            armed_at_wall = now_ns(CLOCK_MONOTONIC);
            armed_at_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
            qemu_plugin_reset(plugin_id, reset_done);
        }
        break;
    case DISARM:
        if (armed) {
            armed = false;
            disarmed = true;
            v->counting = false;
            armed_wall += now_ns(CLOCK_MONOTONIC) - armed_at_wall;
            armed_cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - armed_at_cpu;
        }
        break;
    case BEGIN:
        in_segment = true;
        windows = insns = 0;
        v->pending = NULL;
        break;
    case END:
        if (in_segment) {
            in_segment = false;
            v->counting = false;
            write_segment();
        }
        break;
    default:
        break;
    }
}

/* marker returns the mark an instruction's bytes encode, or 0. */
static enum mark marker(const uint8_t *b, size_t n)
{
    uint32_t imm;
    if (n == 6 && (b[0] & 0xf0) == 0x40 && (b[0] & 0x08) == 0 && b[1] >= 0xb8 && b[1] <= 0xbf) {
        b++, n--; /* REX without W, then mov r32, imm32 */
    }
    if (n == 7 && (b[0] & 0xf8) == 0x48 && b[1] == 0xc7 && (b[2] & 0xf8) == 0xc0) {
        b += 2, n -= 2; /* mov r/m64, imm32 (sign-extended) */
    } else if (n == 5 && b[0] >= 0xb8 && b[0] <= 0xbf) {
        b++, n--;
    } else {
        return 0;
    }
    if (n != 4) {
        return 0;
    }
    imm = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if ((imm & 0xffffff00u) != MARK_BASE || (imm & 0xff) == 0 || (imm & 0xff) >= MARK_MAX) {
        return 0;
    }
    return (enum mark)(imm & 0xff);
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        const uint8_t *bytes = qemu_plugin_insn_data(insn);
        size_t size = qemu_plugin_insn_size(insn);
        enum mark m = marker(bytes, size);
        struct pcstat *p;
        if (m) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)m);
        }
        if (!armed) {
            continue;
        }
        if (i == 0) {
            qemu_plugin_register_vcpu_tb_exec_cb(tb, block_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)pc);
        }
        p = pcstat_of(pc);
        if (p->pc == PC_OVERFLOW) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_untracked_cb, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)pc);
        } else {
            p->size = (uint8_t)size;
            p->special = (uint8_t)special_of(bytes, size);
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_cb, QEMU_PLUGIN_CB_NO_REGS, p);
            if (i == n - 1) {
                p->kind = (uint8_t)decode_flow(bytes, size, pc, &p->target);
                qemu_plugin_register_vcpu_insn_exec_cb(insn, flow_cb, QEMU_PLUGIN_CB_NO_REGS, p);
            }
        }
        qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, p);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    if (out) {
        fprintf(out, "end segments %" PRIu64 " marks %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                " armed_ns %" PRIu64 " %" PRIu64 "\n",
                segments, marks[1], marks[2], marks[3], marks[4], marks[5], marks[6], armed_wall, armed_cpu);
        fclose(out);
        out = NULL;
    }
}

static void register_all(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
}

static bool parse_pair(const char *v, uint64_t pair[2])
{
    char *end;
    pair[0] = strtoull(v, &end, 0);
    if (*end == 'K' || *end == 'k') {
        pair[0] <<= 10, end++;
    } else if (*end == 'M' || *end == 'm') {
        pair[0] <<= 20, end++;
    }
    if (*end != ':') {
        return false;
    }
    pair[1] = strtoull(end + 1, &end, 0);
    return *end == 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    const char *outfile = NULL;
    plugin_id = id;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        const char *k = argv[i], *v = eq ? eq + 1 : "";
        bool ok = eq != NULL;
        if (eq) {
            *eq = 0;
        }
        if (ok && strcmp(k, "outfile") == 0) {
            outfile = v;
        } else if (ok && strcmp(k, "l1d") == 0) {
            ok = parse_pair(v, cfg_l1d);
        } else if (ok && strcmp(k, "l1i") == 0) {
            ok = parse_pair(v, cfg_l1i);
        } else if (ok && strcmp(k, "llc") == 0) {
            ok = parse_pair(v, cfg_llc);
        } else if (ok && strcmp(k, "dtlb") == 0) {
            ok = parse_pair(v, cfg_dtlb);
        } else if (ok && strcmp(k, "line") == 0) {
            line_size = strtoull(v, NULL, 0);
        } else if (ok && strcmp(k, "page") == 0) {
            page_size = strtoull(v, NULL, 0);
        } else if (ok && strcmp(k, "pcs") == 0) {
            pcs_out = strtoul(v, NULL, 0);
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "memcount: bad argument %s (want outfile=PATH, l1d|l1i|llc=BYTES:WAYS, dtlb=ENTRIES:WAYS, line=, page=, pcs=)\n", k);
            return 1;
        }
    }
    if (!outfile) {
        fprintf(stderr, "memcount: no outfile=PATH\n");
        return 1;
    }
    if (log2u(line_size) < 0 || log2u(page_size) < 0 || pcs_out > 256) {
        fprintf(stderr, "memcount: line and page must be powers of two, pcs at most 256\n");
        return 1;
    }
    for (int i = 0; i < MAX_VCPUS; i++) {
        struct vcpu *v = &vcpus[i];
        if (!cache_init(&v->l1d, "l1d", cfg_l1d[0] / line_size, cfg_l1d[1], line_size) ||
            !cache_init(&v->l1i, "l1i", cfg_l1i[0] / line_size, cfg_l1i[1], line_size) ||
            !cache_init(&v->llc, "llc", cfg_llc[0] / line_size, cfg_llc[1], line_size) ||
            !cache_init(&v->dtlb, "dtlb", cfg_dtlb[0], cfg_dtlb[1], page_size)) {
            fprintf(stderr, "memcount: each cache needs a power-of-two number of sets (size / line / ways)\n");
            return 1;
        }
        if (i == 0 && info->system_emulation && info->system.smp_vcpus > MAX_VCPUS) {
            fprintf(stderr, "memcount: at most %d vCPUs\n", MAX_VCPUS);
            return 1;
        }
    }
    out = fopen(outfile, "w");
    if (!out) {
        perror("memcount: outfile");
        return 1;
    }
    fprintf(out, "memcount 2 l1d %" PRIu64 " %" PRIu64 " l1i %" PRIu64 " %" PRIu64 " llc %" PRIu64 " %" PRIu64
            " dtlb %" PRIu64 " %" PRIu64 " line %" PRIu64 " page %" PRIu64 "\n",
            cfg_l1d[0], cfg_l1d[1], cfg_l1i[0], cfg_l1i[1], cfg_llc[0], cfg_llc[1], cfg_dtlb[0], cfg_dtlb[1],
            line_size, page_size);
    fflush(out);
    register_all(id);
    return 0;
}
