/*
 * Drives the emulated device from C: QD1 reads with an Urgent hint under
 * calibrated interrupts (each must arrive by an urgent-only interrupt),
 * then a batch of 16 reads whose last carries the Barrier hint.
 * cint_emu_start requires real-time priority for the interrupt handler;
 * where the system refuses it (CINT_EMU_EREALTIME) this example says so
 * and runs with a normal-priority handler through cint_emu_start_with.
 * Usage: c_client DEVICE_CPU APP_CPU. Exit status 0 on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include "cint_emu.h"

#define CHECK(expr)                                                      \
    do {                                                                 \
        int32_t rc_ = (expr);                                            \
        if (rc_ != CINT_EMU_OK) {                                        \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #expr, \
                    (int)rc_);                                           \
            return 1;                                                    \
        }                                                                \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s DEVICE_CPU APP_CPU\n", argv[0]);
        return 2;
    }
    cint_emu_config config = {
        .device_cpu = (uint32_t)atoi(argv[1]),
        .app_cpu = (uint32_t)atoi(argv[2]),
        .policy = CINT_EMU_POLICY_CINTERRUPTS,
        .delta_ns = 6000,
        .thr = 32,
        .service_ns = 10000,
        .parallel_units = 4,
        .path = NULL,
    };
    cint_emu *emu = NULL;
    if (cint_emu_start_with(&config, 0x80000000u, &emu) != CINT_EMU_EINVAL ||
        emu != NULL) {
        fprintf(stderr, "an unknown start flag was accepted\n");
        return 1;
    }
    int32_t rc = cint_emu_start(&config, &emu);
    if (rc == CINT_EMU_EREALTIME) {
        fprintf(stderr, "note: SCHED_FIFO refused, the interrupt handler "
                        "runs at normal priority\n");
        rc = cint_emu_start_with(&config, CINT_EMU_FLAG_REALTIME_PREFER, &emu);
    }
    CHECK(rc);
    uint32_t realtime = 0;
    CHECK(cint_emu_realtime_handlers(emu, &realtime));
    /* Four driver tags: the batch of 16 below waits for them in submit. */
    if (cint_emu_limit_tags(emu, 0) != CINT_EMU_EINVAL) {
        fprintf(stderr, "a queue of no tags was accepted\n");
        return 1;
    }
    CHECK(cint_emu_limit_tags(emu, 4));
    cint_emu_client *client = NULL;
    CHECK(cint_emu_client_new(emu, 16, &client));
    if (cint_emu_limit_tags(emu, 8) != CINT_EMU_EINVAL) {
        fprintf(stderr, "tags were changed after a client attached\n");
        return 1;
    }

    cint_emu_completion done[16];
    uint32_t got = 0;
    for (uint64_t i = 0; i < 100; i++) {
        CHECK(cint_emu_submit(client, CINT_EMU_OP_READ, i * 4096, 4096,
                              CINT_EMU_HINT_URGENT, NULL, i));
        CHECK(cint_emu_wait(client, 1, done, 16, &got));
        if (got != 1 || done[0].user_data != i || done[0].result != 4096 ||
            done[0].delivered_by != 1) {
            fprintf(stderr, "QD1 read %llu: got %u, result %lld, by %u\n",
                    (unsigned long long)i, got, (long long)done[0].result,
                    done[0].delivered_by);
            return 1;
        }
    }

    for (uint64_t i = 0; i < 16; i++) {
        uint32_t hint = i == 15 ? CINT_EMU_HINT_BARRIER : 0;
        CHECK(cint_emu_submit(client, CINT_EMU_OP_READ, i * 4096, 4096, hint,
                              NULL, 1000 + i));
    }
    uint32_t seen = 0;
    while (seen < 16) {
        CHECK(cint_emu_wait(client, 1, done, 16, &got));
        for (uint32_t k = 0; k < got; k++) {
            if (done[k].result != 4096 || done[k].user_data < 1000) {
                fprintf(stderr, "batch entry %u failed\n", k);
                return 1;
            }
        }
        seen += got;
    }
    if (cint_emu_submit(client, 7, 0, 4096, 0, NULL, 0) != CINT_EMU_EINVAL) {
        fprintf(stderr, "a bad op code was accepted\n");
        return 1;
    }

    uint64_t irqs = 0, urgent = 0;
    CHECK(cint_emu_stats(emu, &irqs, &urgent));
    CHECK(cint_emu_shutdown(emu));
    if (cint_emu_submit(client, CINT_EMU_OP_READ, 0, 4096, 0, NULL, 0) !=
        CINT_EMU_ESHUTDOWN) {
        fprintf(stderr, "submission after shutdown was accepted\n");
        return 1;
    }
    CHECK(cint_emu_client_free(client));
    printf("ok: %llu irqs, %llu urgent-only, %u real-time handler(s)\n",
           (unsigned long long)irqs, (unsigned long long)urgent, realtime);
    return urgent >= 100 ? 0 : 1;
}
