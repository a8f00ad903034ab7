/*
 * Drives one calibrated-interrupts completion queue through the C ABI and
 * checks every decision against docs/ALGORITHMS.md section 4, then the
 * completion-mode selector against section 10. Exits 0 when all
 * checks pass, 1 on the first mismatch (with a message on stderr).
 *
 * Build (see tests/c_example.rs, which does this for you):
 *   cc -std=c11 -I include examples/cinterrupts_queue.c \
 *      libcint_policy_ffi.a -lpthread -ldl -lm
 */
#include <stdio.h>
#include <string.h>

#include "cint_policy.h"

#define US 1000u

static int failures;

#define CHECK_EQ(what, got, want)                                              \
    do {                                                                       \
        long long got_ = (long long)(got), want_ = (long long)(want);          \
        if (got_ != want_) {                                                   \
            fprintf(stderr, "%s:%d: %s: got %lld, want %lld\n", __FILE__,      \
                    __LINE__, what, got_, want_);                              \
            failures++;                                                        \
            return;                                                            \
        }                                                                      \
    } while (0)

/* Submits one request and returns its sequence number. */
static uint64_t submit(cint_policy *q, uint64_t now, uint32_t hint) {
    uint64_t seq = UINT64_MAX;
    int rc = cint_policy_submit(q, now, hint, &seq);
    if (rc != CINT_OK) {
        fprintf(stderr, "submit failed: %s\n", cint_strerror(rc));
        failures++;
    }
    return seq;
}

/* Completes `seq` and returns the interrupt decision (or the error code). */
static int complete(cint_policy *q, uint64_t now, uint64_t seq, uint32_t hint) {
    int irq = -100;
    int rc = cint_policy_complete(q, now, seq, hint, &irq);
    return rc == CINT_OK ? irq : rc;
}

static void cinterrupts_decisions(void) {
    cint_policy q;
    uint64_t deadline = 0;
    uint32_t cif = 0;
    int irq = -100;

    /* delta 6 us, thr 4, OOO on, relaxed Barrier, no storm guard. */
    CHECK_EQ("init", cint_policy_init_cinterrupts(&q, 6 * US, 4, true, false, 0, 0), CINT_OK);
    CHECK_EQ("no deadline when idle", cint_policy_next_deadline(&q, &deadline), 0);

    uint64_t s0 = submit(&q, 100, 0);
    uint64_t s1 = submit(&q, 100, 0);
    uint64_t s2 = submit(&q, 100, 0);
    CHECK_EQ("sequence numbers", s0 + 1 == s1 && s1 + 1 == s2, 1);
    CHECK_EQ("in flight", (cint_policy_in_flight(&q, &cif), cif), 3);

    /* Unmarked completions are coalesced; the quiescence timer is armed. */
    CHECK_EQ("unmarked #1", complete(&q, 1000, s0, 0), CINT_IRQ_NONE);
    CHECK_EQ("unmarked #2", complete(&q, 1100, s1, 0), CINT_IRQ_NONE);
    CHECK_EQ("deadline pending", cint_policy_next_deadline(&q, &deadline), 1);
    CHECK_EQ("deadline = last + delta", deadline, 1100 + 6 * US);
    CHECK_EQ("unmarked #3", complete(&q, 1200, s2, 0), CINT_IRQ_NONE);

    /* Urgent with OOO: an urgent-only interrupt, not counted toward thr. */
    uint64_t u = submit(&q, 1250, CINT_HINT_URGENT);
    CHECK_EQ("urgent", complete(&q, 1300, u, CINT_HINT_URGENT), CINT_IRQ_URGENT_ONLY);

    /* The fourth unmarked completion reaches thr: full interrupt. */
    uint64_t s3 = submit(&q, 1300, 0);
    CHECK_EQ("unmarked reaches thr", complete(&q, 1400, s3, 0), CINT_IRQ_FULL);

    /* Barrier (relaxed): full interrupt at once. */
    uint64_t b = submit(&q, 1400, CINT_HINT_BARRIER);
    CHECK_EQ("barrier", complete(&q, 1500, b, CINT_HINT_BARRIER), CINT_IRQ_FULL);

    /* Both bits set means unmarked: coalesced, then the timer fires. */
    uint64_t both = submit(&q, 1500, CINT_HINT_URGENT | CINT_HINT_BARRIER);
    CHECK_EQ("both bits = unmarked", complete(&q, 2000, both, 3), CINT_IRQ_NONE);
    CHECK_EQ("deadline after lone completion", cint_policy_next_deadline(&q, &deadline), 1);
    CHECK_EQ("deadline value", deadline, 2000 + 6 * US);
    CHECK_EQ("timer early", (cint_policy_timer(&q, deadline - 1, &irq), irq), CINT_IRQ_NONE);
    CHECK_EQ("timer", (cint_policy_timer(&q, deadline, &irq), irq), CINT_IRQ_FULL);
    CHECK_EQ("idle again", cint_policy_next_deadline(&q, &deadline), 0);
    CHECK_EQ("nothing in flight", (cint_policy_in_flight(&q, &cif), cif), 0);

    /* A cint_policy is plain memory: a copy carries on independently. */
    cint_policy copy;
    memcpy(&copy, &q, sizeof q);
    uint64_t c = submit(&copy, 9000, CINT_HINT_URGENT);
    CHECK_EQ("copy works", complete(&copy, 9100, c, CINT_HINT_URGENT), CINT_IRQ_URGENT_ONLY);
}

/* Drives `q` with Urgent completions every `gap` ns from `*now` until the
 * storm guard holds one (returns 1) or `limit` completions pass (0). */
static int storm_until_held(cint_policy *q, uint64_t *now, uint64_t gap, int limit) {
    for (int i = 0; i < limit; i++) {
        *now += gap;
        uint64_t s = submit(q, *now, CINT_HINT_URGENT);
        if (complete(q, *now, s, CINT_HINT_URGENT) == CINT_IRQ_NONE) {
            return 1;
        }
    }
    return 0;
}

static void storm_guard_modes(void) {
    cint_policy q;
    uint64_t now = 0, deadline = 0;
    int irq = -100;

    /* Rate mode (T = 10 us at 100 000 IRQ/s): Urgent completions every
     * 5 us engage the guard, which then holds them in a group that fires
     * at most T after its first member. */
    CHECK_EQ("init rate", cint_policy_init_cinterrupts_guard(&q, 6 * US, 32, true, false, 100000,
                                                             CINT_GUARD_RATE, 0), CINT_OK);
    CHECK_EQ("rate engages", storm_until_held(&q, &now, 5 * US, 1000), 1);
    uint64_t held_at = now;
    CHECK_EQ("group deadline", cint_policy_next_deadline(&q, &deadline), 1);
    CHECK_EQ("held at most T", deadline <= held_at + 10 * US, 1);
    CHECK_EQ("group fires", (cint_policy_timer(&q, deadline, &irq), irq), CINT_IRQ_URGENT_ONLY);

    /* Artifact mode: the held Urgent completion is handled as unmarked and
     * waits for the quiescence interval (delta = 6 us). */
    now = 0;
    CHECK_EQ("init artifact", cint_policy_init_cinterrupts_guard(&q, 6 * US, 32, true, false, 100000,
                                                                 CINT_GUARD_ARTIFACT, 0), CINT_OK);
    CHECK_EQ("artifact engages", storm_until_held(&q, &now, 5 * US, 1000), 1);
    CHECK_EQ("quiescence deadline", (cint_policy_next_deadline(&q, &deadline), deadline),
             now + 6 * US);
    CHECK_EQ("bad mode", cint_policy_init_cinterrupts_guard(&q, 6 * US, 32, true, false, 100000, 7, 0),
             CINT_EINVAL);
}

static void error_codes(void) {
    cint_policy q;
    uint64_t seq = 0;
    int irq = 0;

    memset(&q, 0, sizeof q);
    CHECK_EQ("uninitialised", cint_policy_submit(&q, 0, 0, &seq), CINT_ENOTINIT);
    CHECK_EQ("thr 0", cint_policy_init_cinterrupts(&q, 6 * US, 0, true, false, 0, 0), CINT_EINVAL);
    CHECK_EQ("still uninitialised", cint_policy_submit(&q, 0, 0, &seq), CINT_ENOTINIT);
    CHECK_EQ("delta 0", cint_policy_init_adaptive(&q, 0, 4, 0), CINT_EINVAL);
    CHECK_EQ("null policy", cint_policy_init_none(NULL, 0), CINT_ENULL);

    CHECK_EQ("init", cint_policy_init_cinterrupts(&q, 6 * US, 4, true, true, 0, 1000), CINT_OK);
    CHECK_EQ("hint bits 4", cint_policy_submit(&q, 1000, 4, &seq), CINT_EHINT);
    CHECK_EQ("null seq_out", cint_policy_submit(&q, 1000, 0, NULL), CINT_ENULL);
    CHECK_EQ("time before init", cint_policy_submit(&q, 999, 0, &seq), CINT_ETIME);
    CHECK_EQ("submit", cint_policy_submit(&q, 1000, 0, &seq), CINT_OK);
    CHECK_EQ("unknown seq", cint_policy_complete(&q, 1100, seq + 1, 0, &irq), CINT_ESEQ);
    CHECK_EQ("null irq_out", cint_policy_complete(&q, 1100, seq, 0, NULL), CINT_ENULL);
    CHECK_EQ("bad hint on completion", cint_policy_complete(&q, 1100, seq, 8, &irq), CINT_EHINT);
    CHECK_EQ("complete", cint_policy_complete(&q, 1100, seq, 0, &irq), CINT_OK);
    CHECK_EQ("repeated completion", cint_policy_complete(&q, 1200, seq, 0, &irq), CINT_ESEQ);
    CHECK_EQ("time backwards", cint_policy_timer(&q, 1099, &irq), CINT_ETIME);
    CHECK_EQ("not vIC", cint_policy_vic_ipi_needed(&q, 2000), CINT_ENOTSUP);
    CHECK_EQ("strerror", strcmp(cint_strerror(CINT_ESEQ), cint_strerror(CINT_OK)) != 0, 1);
}

static void vic_and_hints(void) {
    cint_policy q;
    cint_vic_params params;
    uint32_t up = 0, skip = 0, bits = 99;

    CHECK_EQ("defaults", cint_vic_params_default(&params), CINT_OK);
    CHECK_EQ("default cif_threshold", params.cif_threshold, 4);
    params.cif_threshold = 0;
    CHECK_EQ("cif_threshold 0", cint_policy_init_vic(&q, &params, 0), CINT_EINVAL);
    params.cif_threshold = 4;
    CHECK_EQ("init vic", cint_policy_init_vic(&q, &params, 0), CINT_OK);
    CHECK_EQ("ratio", cint_policy_vic_ratio(&q, &up, &skip), CINT_OK);
    CHECK_EQ("ratio 1/1", up * 10 + skip, 11);
    CHECK_EQ("ipi before any delivery", cint_policy_vic_ipi_needed(&q, 10), 1);

    CHECK_EQ("merge U+B", (cint_hint_merge(CINT_HINT_URGENT, CINT_HINT_BARRIER, &bits), bits),
             CINT_HINT_URGENT);
    CHECK_EQ("merge bad bits", cint_hint_merge(5, 0, &bits), CINT_EHINT);
    cint_io_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.batch_index = 3;
    ctx.batch_len = 4;
    CHECK_EQ("io_uring batch tail", (cint_hint_request(CINT_CALL_IO_URING_BATCH, &ctx, &bits), bits),
             CINT_HINT_BARRIER);
    CHECK_EQ("fsync", (cint_hint_request(CINT_CALL_FSYNC, &ctx, &bits), bits), CINT_HINT_URGENT);
    ctx.rw_flags = 0x100 | 0x200; /* RWF_URGENT | RWF_BARRIER */
    CHECK_EQ("explicitly unmarked", (cint_hint_request(CINT_CALL_FSYNC, &ctx, &bits), bits), 0);
    CHECK_EQ("unknown call", cint_hint_request(1000, &ctx, &bits), CINT_EINVAL);
}

/* The completion-mode selector (docs/ALGORITHMS.md section 10) on the
 * energy study's Skylake host: spins for a fast 4 KiB read, sleeps until the
 * interrupt for a 2 ms read unless its waits are seen to keep the core in
 * POLL, gives the core away when it is contended. */
static void mode_select(void) {
    cint_mode_select s;
    cint_mode_select_params p;
    int mode = -100;
    uint64_t sleep = 99;

    memset(&p, 0, sizeof p);
    p.static_mw = 43000;
    p.spin_mw = 6500;
    p.busy_mw = 8500;
    p.iowait_factor = 10; /* Linux 5.15 menu: an 8 us wait keeps the core in POLL */
    p.idle_count = 3;
    p.idle_states[0].power_mw = 6500; /* POLL */
    p.idle_states[1].exit_latency = 2 * US;
    p.idle_states[1].target_residency = 2 * US;
    p.idle_states[1].power_mw = 2000; /* C1 */
    p.idle_states[2].exit_latency = 85 * US;
    p.idle_states[2].target_residency = 200 * US;
    p.idle_states[2].power_mw = 100; /* C6 */
    p.sleep_path = 1560;
    p.timer_arm = 200;
    p.timer_slack = 2 * US;

    memset(&s, 0, sizeof s);
    CHECK_EQ("not initialised", cint_mode_select_record(&s, 4096, false, 8 * US), CINT_ENOTINIT);
    p.idle_states[2].target_residency = 10 * US; /* below its exit latency */
    CHECK_EQ("bad table", cint_mode_select_init(&s, &p), CINT_EINVAL);
    p.idle_states[2].target_residency = 200 * US;
    CHECK_EQ("init", cint_mode_select_init(&s, &p), CINT_OK);

    CHECK_EQ("nothing measured", cint_mode_select_choose(&s, 4096, false, 1, 0, &mode, &sleep), CINT_OK);
    CHECK_EQ("nothing measured: spin", mode, CINT_MODE_POLL);
    CHECK_EQ("record", cint_mode_select_record(&s, 4096, false, 8 * US), CINT_OK);
    CHECK_EQ("record", cint_mode_select_record(&s, 1 << 20, false, 2000 * US), CINT_OK);
    CHECK_EQ("4 KiB", cint_mode_select_choose(&s, 4096, false, 1, 0, &mode, &sleep), CINT_OK);
    CHECK_EQ("4 KiB spins", mode, CINT_MODE_POLL);
    CHECK_EQ("1 MiB", cint_mode_select_choose(&s, 1 << 20, false, 1, 0, &mode, &sleep), CINT_OK);
    CHECK_EQ("1 MiB interrupts", mode, CINT_MODE_INTERRUPT);
    CHECK_EQ("contended, polled queue",
             cint_mode_select_choose(&s, 4096, false, 1, CINT_SELECT_CONTENDED | CINT_SELECT_NO_INTERRUPT,
                                     &mode, &sleep),
             CINT_OK);
    CHECK_EQ("contended: sleep", mode, CINT_MODE_SLEEP);
    CHECK_EQ("half the minimum", sleep, 4 * US);
    /* The 1 MiB reads' waits are seen to leave the core in POLL: after
     * six, the interrupt no longer pays. */
    for (int i = 0; i < 6; i++)
        CHECK_EQ("record idle", cint_mode_select_record_idle(&s, 1 << 20, false, CINT_MODE_INTERRUPT, 0, 0), CINT_OK);
    CHECK_EQ("1 MiB again", cint_mode_select_choose(&s, 1 << 20, false, 1, 0, &mode, &sleep), CINT_OK);
    CHECK_EQ("1 MiB: no interrupt in POLL", mode != CINT_MODE_INTERRUPT, 1);
    CHECK_EQ("state past the table", cint_mode_select_record_idle(&s, 4096, false, CINT_MODE_SLEEP, 4 * US, 3), CINT_EINVAL);
    CHECK_EQ("unknown mode", cint_mode_select_record_idle(&s, 4096, false, 7, 0, 0), CINT_EINVAL);
    CHECK_EQ("polled: nothing to learn", cint_mode_select_record_idle(&s, 4096, false, CINT_MODE_POLL, 0, 2), CINT_OK);
    /* A caller that looks at one wait in sixteen says so. */
    CHECK_EQ("observe one in 16", cint_mode_select_observe_idle_one_in(&s, 16), CINT_OK);
    CHECK_EQ("observe one in 0", cint_mode_select_observe_idle_one_in(&s, 0), CINT_EINVAL);
    CHECK_EQ("unknown flag", cint_mode_select_choose(&s, 4096, false, 1, 4, &mode, &sleep), CINT_EINVAL);
    CHECK_EQ("null out", cint_mode_select_choose(&s, 4096, false, 1, 0, NULL, &sleep), CINT_ENULL);
}

int main(void) {
    cinterrupts_decisions();
    storm_guard_modes();
    error_codes();
    vic_and_hints();
    mode_select();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("cinterrupts_queue: all checks passed\n");
    return 0;
}
