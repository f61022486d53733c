/*
 * bpred_test: the plugin's branch model (bpred.h) on branch streams of
 * known patterns, run by vmrunner's TestPluginPredictsBranches for each
 * profile's sizes. Arguments: the model as the plugin's bpred= argument
 * takes it (RSB:KIND:LOG_BASE:TABLES:LOG_ENTRIES:TAG_BITS:MIN_HIST:MAX_HIST:
 * LOG_BTB:LOG_ITA:ITA_HIST, KIND c for checked, r for circular). Prints one
 * line per pattern: its name, the branches after warm-up, the mispredicted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bpred.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static unsigned coin(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 32) & 1;
}

static void report(const char *name, struct bcount c)
{
    printf("%s|%" PRIu64 "|%" PRIu64 "\n", name, c.n, c.miss);
}

/* take returns the counts of kind since the last take. */
static struct bcount take(struct bcount *c)
{
    struct bcount out = *c;
    c->n = c->miss = 0;
    return out;
}

/* A loop of iterations, each a few fixed branches around the branch under
 * test at 0x1000 whose outcome the pattern gives; the first warm
 * iterations are not reported. */
static void cond_pattern(struct bpred *b, const char *name, unsigned (*outcome)(unsigned), unsigned warm, unsigned n)
{
    struct bcount c = {0};
    for (unsigned i = 0; i < warm + n; i++) {
        bool miss;
        bpred_cond(b, 0x2000, true);               /* the loop's own branch: always taken */
        miss = bpred_cond(b, 0x1000, outcome(i)); /* the branch under test */
        bpred_cond(b, 0x3000, false);              /* a check that never fires */
        if (i >= warm) {
            c.n++;
            c.miss += miss;
        }
    }
    report(name, c);
}

static unsigned always(unsigned i) { (void)i; return 1; }
static unsigned never(unsigned i) { (void)i; return 0; }
static unsigned alternate(unsigned i) { return i & 1; }
static unsigned period5(unsigned i) { return (0x0bu >> (i % 5)) & 1; } /* T T N T N */
static unsigned random_bit(unsigned i) { (void)i; return coin(); }
static unsigned loop10(unsigned i) { return i % 10 != 9; } /* a loop of 10 iterations: its back edge */

int main(int argc, char **argv)
{
    struct bpred_cfg cfg = {0};
    char kind = 0;
    struct bpred b;
    if (argc != 2 ||
        sscanf(argv[1], "%u:%c:%u:%u:%u:%u:%u:%u:%u:%u:%u", &cfg.rsb_depth, &kind, &cfg.log_base, &cfg.tables,
               &cfg.log_entries, &cfg.tag_bits, &cfg.min_hist, &cfg.max_hist, &cfg.log_btb, &cfg.log_ita,
               &cfg.ita_hist) != 11 ||
        (kind != 'c' && kind != 'r')) {
        fprintf(stderr, "usage: bpred_test RSB:c|r:LOG_BASE:TABLES:LOG_ENTRIES:TAG_BITS:MIN_HIST:MAX_HIST:LOG_BTB:LOG_ITA:ITA_HIST\n");
        return 2;
    }
    cfg.rsb_kind = kind == 'c' ? RSB_CHECKED : RSB_CIRCULAR;
    if (!bpred_init(&b, &cfg)) {
        fprintf(stderr, "bpred_test: model out of range\n");
        return 2;
    }
    printf("hist");
    for (unsigned i = 0; i < cfg.tables; i++) {
        printf("|%u", b.hist[i]);
    }
    printf("\n");

    /* conditional branches: the one under test among two others */
    struct {
        const char *name;
        unsigned (*f)(unsigned);
    } conds[] = {{"taken", always},    {"not-taken", never},   {"alternating", alternate},
                 {"period5", period5}, {"loop10", loop10},     {"random", random_bit}};
    for (size_t k = 0; k < sizeof(conds) / sizeof(conds[0]); k++) {
        struct bpred fresh;
        bpred_init(&fresh, &cfg);
        cond_pattern(&fresh, conds[k].name, conds[k].f, 2000, 100000);
    }

    /* returns: nested calls within the stack's depth, balanced */
    bpred_init(&b, &cfg);
    for (unsigned round = 0; round < 1000; round++) {
        unsigned d = cfg.rsb_depth;
        for (unsigned i = 0; i < d; i++) {
            bpred_call(&b, 0x10000 + 16 * i);
        }
        for (unsigned i = d; i-- > 0;) {
            bpred_ret(&b, 0x20000 + i, 0x10000 + 16 * i);
        }
    }
    report("nested-within-depth", take(&b.ret));
    /* deeper than the stack: the outermost returns cannot be predicted */
    for (unsigned round = 0; round < 1000; round++) {
        unsigned d = cfg.rsb_depth + 8;
        for (unsigned i = 0; i < d; i++) {
            bpred_call(&b, 0x10000 + 16 * i);
        }
        for (unsigned i = d; i-- > 0;) {
            bpred_ret(&b, 0x20000 + i, 0x10000 + 16 * i);
        }
    }
    report("nested-beyond-depth", take(&b.ret));

    /* a function returning through an aligned return thunk (jmp to a plain
     * ret, as ITS's and RETBleed's thunks): predicted */
    bpred_init(&b, &cfg);
    for (unsigned i = 0; i < 10000; i++) {
        bpred_call(&b, 0x30005);            /* caller: call f */
        bpred_ret(&b, 0x40000, 0x30005);    /* __x86_return_thunk: ret */
    }
    report("return-thunk", take(&b.ret));
    /* SRSO's Safe RET: f jumps to srso_return_thunk, whose call pushes the
     * address of its ud2; srso_safe_ret drops it from the stack (lea) and
     * returns to f's caller, which the stack buffer does not predict */
    bpred_init(&b, &cfg);
    for (unsigned i = 0; i < 10000; i++) {
        bpred_call(&b, 0x30005);         /* caller: call f */
        bpred_call(&b, 0x50005);         /* srso_return_thunk: call srso_safe_ret (ud2 follows) */
        bpred_ret(&b, 0x50104, 0x30005); /* srso_safe_ret: lea 8(%rsp),%rsp; ret */
    }
    report("safe-ret", take(&b.ret));

    /* indirect branches */
    bpred_init(&b, &cfg);
    for (unsigned i = 0; i < 10000; i++) {
        bpred_indirect(&b, 0x60000, 0x70000);
    }
    b.ind.n = b.ind.miss = 0;
    for (unsigned i = 0; i < 100000; i++) {
        bpred_indirect(&b, 0x60000, 0x70000);
    }
    report("indirect-one-target", take(&b.ind));
    bpred_init(&b, &cfg);
    for (unsigned i = 0; i < 102000; i++) {
        if (i == 2000) {
            take(&b.ind);
        }
        bpred_indirect(&b, 0x61000, i & 1 ? 0x71000 : 0x72000);
    }
    report("indirect-alternating", take(&b.ind));
    bpred_init(&b, &cfg);
    for (unsigned i = 0; i < 102000; i++) {
        if (i == 2000) {
            take(&b.ind);
        }
        bpred_indirect(&b, 0x62000, 0x73000 + 0x40 * (coin() * 2 + coin()));
    }
    report("indirect-random4", take(&b.ind));
    return 0;
}
