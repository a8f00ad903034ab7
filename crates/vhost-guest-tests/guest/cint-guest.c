/*
 * The guest side of the cinterrupts end-to-end test (issue #12).
 *
 * Runs inside an unmodified Linux guest, as a static binary started by the
 * initramfs' /init, against every virtio-blk disk (/sys/block/vd*):
 *
 *   integrity  writes a pseudo-random pattern with O_DIRECT (several threads,
 *              many requests in flight) and with buffered I/O, flushes, drops
 *              the block device's page cache, reads it back both ways and
 *              checks every byte in the guest; prints FNV-1a checksums the
 *              host compares with the image.
 *   mixed      a latency-sensitive reader tagged with the RT I/O priority
 *              class (what `ionice -c1` sets) runs beside batch readers, all
 *              on the CPU queue 0's interrupt is delivered to.
 *   queues     (only on a disk with more than one hardware queue) for each
 *              queue, QUEUE_THREADS threads pinned to a CPU that blk-mq maps
 *              to it write their own stretch of the pattern after the
 *              integrity region with O_DIRECT and read it back, all queues
 *              at once; what each queue was sent and the interrupts on its
 *              vector are reported per queue.
 *   end        the interrupts the disk's queues raised since boot, in total
 *              and per queue vector.
 *   flood      (only with cint.flood=N, instead of the phases above) keeps
 *              FLOOD_THREADS O_DIRECT writes in flight on the first disk for
 *              N seconds, printing the driver's in-flight count every
 *              100 ms, so the host can kill QEMU mid-I/O.
 *
 * Every interrupt count is read from /proc/interrupts (the virtio device's
 * "virtioN-req.Q" MSI-X vectors) before and after each phase, so the host
 * can compare them with the back end's count of call-eventfd writes.
 *
 * Output: one line per fact, "CINT key=value ...", on stdout (the serial
 * console). Parameters come from the kernel command line:
 *   cint.seed=N     base seed of the pattern (the disk's seed is N + slot)
 *   cint.mib=N      MiB written per half of the integrity region
 *   cint.reads=N    RT reads of the mixed phase
 *   cint.batch=N    batch reader threads of the mixed phase
 *   cint.disks=N    disks to wait for before starting
 *   cint.within_us=N  an RT read is counted "within" if it took less
 *   cint.flood=N    run only the flood phase, for N seconds
 *
 * A disk with several queues needs as many vCPUs: Linux uses
 * min(virtqueues, CPUs) queues, and the queues phase pins a thread to one
 * CPU of each.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SECTOR 512
#define PAGE 4096
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_RT 1
#define IOPRIO_WHO_PROCESS 1
#define DIRECT_WRITERS 4
#define MAX_DISKS 16
#define MAX_BATCH 64
#define MAX_QUEUES 16
/* The queues phase: threads per hardware queue, and the 4 KiB blocks each
 * writes and reads back (one request each way per block). */
#define QUEUE_THREADS 4
#define QUEUE_BLOCKS 32

static uint64_t param_seed = 1;
static uint64_t param_mib = 4;
static uint64_t param_reads = 200;
static uint64_t param_batch = 8;
static uint64_t param_disks = 1;
static uint64_t param_within_us = 2000;
static uint64_t param_flood = 0;

static void fail(const char *disk, const char *what)
{
    printf("CINT disk=%s error=\"%s: %s\"\n", disk, what, strerror(errno));
    fflush(stdout);
}

/* splitmix64: the host regenerates the same pattern word for word. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Byte `offset` of the disk's pattern (position-dependent, so a block
 * written to or read from the wrong place is a mismatch). */
static uint8_t pattern_byte(uint64_t seed, uint64_t offset)
{
    uint64_t word = splitmix64(seed + offset / 8);
    return (uint8_t)(word >> (8 * (offset % 8)));
}

static void fill_pattern(uint8_t *buf, uint64_t seed, uint64_t offset, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(seed, offset + i);
}

static uint64_t fnv1a(uint64_t hash, const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        hash ^= buf[i];
        hash *= 0x100000001B3ull;
    }
    return hash;
}

#define FNV_OFFSET 0xCBF29CE484222325ull

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void read_cmdline(void)
{
    char buf[4096];
    FILE *f = fopen("/proc/cmdline", "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n")) {
        unsigned long long v;
        if (sscanf(tok, "cint.seed=%llu", &v) == 1) param_seed = v;
        else if (sscanf(tok, "cint.mib=%llu", &v) == 1) param_mib = v;
        else if (sscanf(tok, "cint.reads=%llu", &v) == 1) param_reads = v;
        else if (sscanf(tok, "cint.batch=%llu", &v) == 1) param_batch = v;
        else if (sscanf(tok, "cint.disks=%llu", &v) == 1) param_disks = v;
        else if (sscanf(tok, "cint.within_us=%llu", &v) == 1) param_within_us = v;
        else if (sscanf(tok, "cint.flood=%llu", &v) == 1) param_flood = v;
    }
    if (param_batch > MAX_BATCH)
        param_batch = MAX_BATCH;
}

struct disk {
    char name[256];     /* vda */
    char path[300];     /* /dev/vda */
    char virtio[32];    /* virtio2: the prefix of its /proc/interrupts names */
    char pci[32];       /* 0000:00:10.0: how the host tells the disks apart */
    unsigned slot;      /* PCI slot number */
    uint64_t seed;
    unsigned queues;    /* blk-mq hardware queues (= virtqueues in use) */
    int queue_cpu[MAX_QUEUES]; /* a CPU blk-mq maps to each queue, or -1 */
};

/* Sum over CPUs of the interrupts whose name is "<virtio>-<kind>" (with
 * `exact`) or starts with it. */
static uint64_t irq_sum(const struct disk *d, const char *kind, int exact)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s-%s", d->virtio, kind);
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return 0;
    char line[1024];
    uint64_t total = 0;
    int cpus = 0;
    if (fgets(line, sizeof line, f))
        for (char *t = strtok(line, " \n"); t; t = strtok(NULL, " \n"))
            cpus++;
    while (fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *name = strrchr(line, ' ');
        if (!name)
            continue;
        name++;
        if (exact ? strcmp(name, prefix) != 0 : strncmp(name, prefix, strlen(prefix)) != 0)
            continue;
        char *p = strchr(line, ':');
        if (!p)
            continue;
        p++;
        for (int c = 0; c < cpus; c++)
            total += strtoull(p, &p, 10);
    }
    fclose(f);
    return total;
}

/* Interrupts on every vector whose name starts with "<virtio>-<kind>". */
static uint64_t irq_count(const struct disk *d, const char *kind)
{
    return irq_sum(d, kind, 0);
}

/* Interrupts on queue `q`'s vector alone ("virtio2-req.1", not
 * "virtio2-req.10"). */
static uint64_t queue_irqs(const struct disk *d, unsigned q)
{
    char kind[32];
    snprintf(kind, sizeof kind, "req.%u", q);
    return irq_sum(d, kind, 1);
}

/* Completed requests of the disk (reads, writes, discards, flushes), from
 * /sys/block/<name>/stat: what the driver handed to the device. */
static uint64_t disk_requests(const struct disk *d)
{
    char path[300];
    snprintf(path, sizeof path, "/sys/block/%.255s/stat", d->name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v[17] = {0};
    int n = 0;
    while (n < 17 && fscanf(f, "%llu", &v[n]) == 1)
        n++;
    fclose(f);
    return v[0] + v[4] + (n > 11 ? v[11] : 0) + (n > 15 ? v[15] : 0);
}

/* Requests the driver has handed to the device and not seen complete
 * (field 9 of /sys/block/<name>/stat). */
static uint64_t disk_in_flight(const struct disk *d)
{
    char path[300];
    snprintf(path, sizeof path, "/sys/block/%.255s/stat", d->name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v[9] = {0};
    int n = 0;
    while (n < 9 && fscanf(f, "%llu", &v[n]) == 1)
        n++;
    fclose(f);
    return n == 9 ? v[8] : 0;
}

/* The disk the workload is on, for the watchdog. */
static _Atomic(const struct disk *) current_disk;

#define STALL_SECONDS 15

/* A request the device never completes, or a completion whose interrupt
 * never comes, leaves the workload blocked for good. The watchdog says so
 * (what the driver sent and saw complete, so the host can compare with the
 * back end's count: equal means the back end never took the requests in
 * flight, fewer means their interrupt was lost) and powers the guest off,
 * so the test fails at once with the evidence. */
static void *watchdog_main(void *arg)
{
    (void)arg;
    const struct disk *last = NULL;
    uint64_t last_done = 0;
    int still = 0;
    for (;;) {
        sleep(1);
        const struct disk *d = atomic_load(&current_disk);
        if (!d)
            continue;
        uint64_t done = disk_requests(d), in_flight = disk_in_flight(d);
        if (d != last || done != last_done || in_flight == 0) {
            last = d;
            last_done = done;
            still = 0;
            continue;
        }
        if (++still < STALL_SECONDS)
            continue;
        printf("CINT disk=%s error=\"stalled: %llu requests in flight, none completed for %d s; "
               "%llu completed, %llu interrupts\"\n",
               d->pci, (unsigned long long)in_flight, STALL_SECONDS, (unsigned long long)done,
               (unsigned long long)irq_count(d, "req."));
        fflush(stdout);
        syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321FEDC, NULL);
    }
    return NULL;
}

struct direct_writer {
    const struct disk *d;
    int fd;
    uint64_t start, end;
    int index;
    int failed;
};

/* Writer `index` of DIRECT_WRITERS writes every DIRECT_WRITERS-th chunk;
 * chunk sizes vary from 4 KiB to 128 KiB so requests of many sizes are in
 * flight at once. */
static void *direct_writer_main(void *arg)
{
    struct direct_writer *w = arg;
    uint8_t *buf;
    if (posix_memalign((void **)&buf, PAGE, 128 * 1024) != 0) {
        w->failed = 1;
        return NULL;
    }
    uint64_t off = w->start;
    int chunk = 0;
    while (off < w->end) {
        size_t len = (size_t)(1 + (splitmix64(w->d->seed ^ (off >> 12)) % 32)) * PAGE;
        if (off + len > w->end)
            len = w->end - off;
        if (chunk % DIRECT_WRITERS == w->index) {
            fill_pattern(buf, w->d->seed, off, len);
            if (pwrite(w->fd, buf, len, (off_t)off) != (ssize_t)len) {
                fail(w->d->pci, "O_DIRECT pwrite");
                w->failed = 1;
                break;
            }
        }
        off += len;
        chunk++;
    }
    free(buf);
    return NULL;
}

/* Reads [start, end) through fd in `step`-byte reads, counts bytes that
 * differ from the pattern, returns the FNV-1a checksum of what was read. */
static int verify(const struct disk *d, int fd, uint64_t start, uint64_t end, size_t step,
                  uint64_t *mismatches, uint64_t *sum)
{
    uint8_t *buf;
    if (posix_memalign((void **)&buf, PAGE, step) != 0)
        return -1;
    uint64_t hash = FNV_OFFSET;
    for (uint64_t off = start; off < end; off += step) {
        size_t len = end - off < step ? end - off : step;
        if (pread(fd, buf, len, (off_t)off) != (ssize_t)len) {
            fail(d->pci, "read back");
            free(buf);
            return -1;
        }
        for (size_t i = 0; i < len; i++)
            if (buf[i] != pattern_byte(d->seed, off + i))
                (*mismatches)++;
        hash = fnv1a(hash, buf, len);
    }
    *sum = hash;
    free(buf);
    return 0;
}

static void phase_integrity(const struct disk *d)
{
    uint64_t half = param_mib << 20;
    uint64_t irq0 = irq_count(d, "req."), req0 = disk_requests(d);
    uint64_t t0 = now_ns();

    /* O_DIRECT half: [0, half), several writers in flight, then fdatasync. */
    int dfd = open(d->path, O_RDWR | O_DIRECT);
    if (dfd < 0) {
        fail(d->pci, "open O_DIRECT");
        return;
    }
    pthread_t threads[DIRECT_WRITERS];
    struct direct_writer writers[DIRECT_WRITERS];
    for (int i = 0; i < DIRECT_WRITERS; i++) {
        writers[i] = (struct direct_writer){d, dfd, 0, half, i, 0};
        pthread_create(&threads[i], NULL, direct_writer_main, &writers[i]);
    }
    int failed = 0;
    for (int i = 0; i < DIRECT_WRITERS; i++) {
        pthread_join(threads[i], NULL);
        failed |= writers[i].failed;
    }
    if (fdatasync(dfd) != 0) {
        fail(d->pci, "fdatasync");
        failed = 1;
    }

    /* Buffered half: [half, 2*half) in odd-sized, unaligned writes through
     * the page cache, then fsync. */
    int bfd = open(d->path, O_RDWR);
    if (bfd < 0) {
        fail(d->pci, "open buffered");
        close(dfd);
        return;
    }
    uint8_t *buf = malloc(65536);
    for (uint64_t off = half; off < 2 * half && !failed;) {
        size_t len = 1 + (size_t)(splitmix64(d->seed ^ off) % 65535);
        if (off + len > 2 * half)
            len = 2 * half - off;
        fill_pattern(buf, d->seed, off, len);
        if (pwrite(bfd, buf, len, (off_t)off) != (ssize_t)len) {
            fail(d->pci, "buffered pwrite");
            failed = 1;
        }
        off += len;
    }
    free(buf);
    if (fsync(bfd) != 0) {
        fail(d->pci, "fsync");
        failed = 1;
    }
    /* Drop the device's page cache so the buffered read-back below reads
     * the disk, not the cache the writes filled. */
    if (ioctl(bfd, BLKFLSBUF, 0) != 0) {
        fail(d->pci, "BLKFLSBUF");
        failed = 1;
    }

    uint64_t mismatches = 0, direct_sum = 0, buffered_sum = 0;
    if (!failed) {
        /* Each half is read back the other way it was written, then the
         * whole region once more with O_DIRECT: both paths must agree. */
        failed |= verify(d, bfd, 0, half, 65536, &mismatches, &direct_sum) != 0;
        failed |= verify(d, dfd, half, 2 * half, 256 * 1024, &mismatches, &buffered_sum) != 0;
        uint64_t again = 0;
        failed |= verify(d, dfd, 0, half, 32 * 1024, &mismatches, &again) != 0;
        if (again != direct_sum)
            mismatches++;
    }
    close(bfd);
    close(dfd);
    uint64_t t1 = now_ns();
    printf("CINT disk=%s phase=integrity ok=%d bytes=%llu mismatches=%llu direct_sum=%016llx "
           "buffered_sum=%016llx irqs=%llu requests=%llu ms=%llu\n",
           d->pci, !failed && mismatches == 0, (unsigned long long)(2 * half),
           (unsigned long long)mismatches, (unsigned long long)direct_sum,
           (unsigned long long)buffered_sum,
           (unsigned long long)(irq_count(d, "req.") - irq0),
           (unsigned long long)(disk_requests(d) - req0), (unsigned long long)((t1 - t0) / 1000000));
    fflush(stdout);
}

struct mixed {
    const struct disk *d;
    int fd;
    uint64_t span;          /* bytes the readers pick 4 KiB blocks from */
    atomic_int stop;
    atomic_ullong batch_ops;
    int failed;
};

static void *batch_main(void *arg)
{
    struct mixed *m = arg;
    uint8_t *buf;
    if (posix_memalign((void **)&buf, PAGE, PAGE) != 0)
        return NULL;
    uint64_t x = (uint64_t)(uintptr_t)buf;
    while (!atomic_load(&m->stop)) {
        x = splitmix64(x);
        off_t off = (off_t)((x % (m->span / PAGE)) * PAGE);
        if (pread(m->fd, buf, PAGE, off) != PAGE) {
            fail(m->d->pci, "batch pread");
            m->failed = 1;
            break;
        }
        atomic_fetch_add(&m->batch_ops, 1);
    }
    free(buf);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The CPU the interrupt of queue `q` is delivered to (the effective
 * affinity of its "virtioN-req.<q>" vector), or -1 if it cannot be read. */
static int queue_irq_cpu(const struct disk *d, unsigned q)
{
    char name[64];
    snprintf(name, sizeof name, "%s-req.%u", d->virtio, q);
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f)
        return -1;
    char line[1024];
    int irq = -1;
    while (irq < 0 && fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        char *last = strrchr(line, ' ');
        if (last && strcmp(last + 1, name) == 0 && sscanf(line, " %d:", &irq) != 1)
            irq = -1;
    }
    fclose(f);
    if (irq < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/irq/%d/effective_affinity_list", irq);
    f = fopen(path, "r");
    if (!f)
        return -1;
    int cpu = -1;
    if (fscanf(f, "%d", &cpu) != 1)
        cpu = -1;
    fclose(f);
    return cpu;
}

/* An RT-class reader (one 4 KiB O_DIRECT read at a time, each waited for)
 * beside `param_batch` batch readers of the default class. */
static void phase_mixed(const struct disk *d)
{
    struct mixed m = {.d = d, .span = 2 * (param_mib << 20)};
    m.fd = open(d->path, O_RDONLY | O_DIRECT);
    if (m.fd < 0) {
        fail(d->pci, "open mixed");
        return;
    }
    uint64_t *lat = calloc(param_reads ? param_reads : 1, sizeof *lat);
    uint8_t *buf;
    if (!lat || posix_memalign((void **)&buf, PAGE, PAGE) != 0) {
        fail(d->pci, "alloc");
        return;
    }
    /* The whole phase runs on the CPU queue 0 interrupts, so with several
     * vCPUs it is what it is with one: the RT reader, the batch readers and
     * the interrupt handler share a CPU, and the RT reader submits its
     * next read before anything else runs. Otherwise the RT reader can
     * submit on one CPU while the other is about to take an interrupt sent
     * for earlier completions, and ride on it. The batch threads inherit
     * the mask. */
    cpu_set_t all, one;
    int cpu = queue_irq_cpu(d, 0);
    int pinned = 0;
    if (cpu >= 0 && sched_getaffinity(0, sizeof all, &all) == 0) {
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    if (!pinned) {
        fail(d->pci, "pinning the mixed phase to queue 0's interrupt CPU");
        m.failed = 1;
    }
    uint64_t irq0 = irq_count(d, "req."), req0 = disk_requests(d);
    pthread_t threads[MAX_BATCH];
    for (uint64_t i = 0; i < param_batch; i++)
        pthread_create(&threads[i], NULL, batch_main, &m);

    /* ioprio_set(IOPRIO_WHO_PROCESS, 0) sets the calling thread's priority:
     * from here on this thread's reads carry class RT in the virtio-blk
     * request header's ioprio field. */
    int prio = (IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT) | 4;
    if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, prio) != 0) {
        fail(d->pci, "ioprio_set RT");
        m.failed = 1;
    }
    /* The reader is the latency-sensitive program: it also gets the CPU
     * first, so its latency is the disk's and its interrupts', not the
     * wait behind batch threads for the guest's one vCPU. */
    struct sched_param sp = {.sched_priority = 1};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) {
        fail(d->pci, "SCHED_FIFO");
        m.failed = 1;
    }
    uint64_t x = d->seed;
    uint64_t reads = 0;
    for (; reads < param_reads && !m.failed; reads++) {
        x = splitmix64(x);
        off_t off = (off_t)((x % (m.span / PAGE)) * PAGE);
        uint64_t t0 = now_ns();
        if (pread(m.fd, buf, PAGE, off) != PAGE) {
            fail(d->pci, "RT pread");
            m.failed = 1;
            break;
        }
        lat[reads] = now_ns() - t0;
    }
    /* Back to the default class and policy for what follows. */
    syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, 0);
    sp.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    atomic_store(&m.stop, 1);
    for (uint64_t i = 0; i < param_batch; i++)
        pthread_join(threads[i], NULL);
    if (pinned)
        sched_setaffinity(0, sizeof all, &all);
    uint64_t irqs = irq_count(d, "req.") - irq0, requests = disk_requests(d) - req0;

    qsort(lat, reads, sizeof *lat, cmp_u64);
    uint64_t total = 0, within = 0;
    for (uint64_t i = 0; i < reads; i++) {
        total += lat[i];
        within += lat[i] < param_within_us * 1000;
    }
    printf("CINT disk=%s phase=mixed cpu=%d ok=%d reader_ops=%llu batch_ops=%llu irqs=%llu requests=%llu "
           "reader_p50_us=%llu reader_p90_us=%llu reader_mean_us=%llu reader_within=%llu "
           "within_us=%llu\n",
           d->pci, cpu, !m.failed, (unsigned long long)reads,
           (unsigned long long)atomic_load(&m.batch_ops), (unsigned long long)irqs,
           (unsigned long long)requests,
           (unsigned long long)(reads ? lat[reads / 2] / 1000 : 0),
           (unsigned long long)(reads ? lat[reads * 9 / 10] / 1000 : 0),
           (unsigned long long)(reads ? total / reads / 1000 : 0), (unsigned long long)within,
           (unsigned long long)param_within_us);
    fflush(stdout);
    free(buf);
    free(lat);
    close(m.fd);
}

struct queue_worker {
    const struct disk *d;
    int fd;
    int cpu;
    uint64_t start;             /* first byte of its stretch */
    pthread_barrier_t *go;
    uint64_t ops;               /* requests it issued: a write and a read per block */
    uint64_t mismatches;
    int failed;
};

/* Pinned to `cpu`, so blk-mq sends every request of this thread to the
 * queue that CPU maps to and the device completes it there: writes its
 * blocks of the pattern one at a time, then reads each back and checks
 * it. */
static void *queue_worker_main(void *arg)
{
    struct queue_worker *w = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    /* Setting the caller's own affinity migrates it before returning. */
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err != 0 || sched_getcpu() != w->cpu) {
        errno = err ? err : EXDEV;
        fail(w->d->pci, "pinning a queue thread");
        w->failed = 1;
    }
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, PAGE, PAGE) != 0)
        w->failed = 1;
    /* Every thread starts together, so all queues are busy at once. */
    pthread_barrier_wait(w->go);
    for (uint64_t b = 0; b < QUEUE_BLOCKS && !w->failed; b++) {
        uint64_t off = w->start + b * PAGE;
        fill_pattern(buf, w->d->seed, off, PAGE);
        if (pwrite(w->fd, buf, PAGE, (off_t)off) != PAGE) {
            fail(w->d->pci, "queue pwrite");
            w->failed = 1;
        }
        w->ops++;
    }
    for (uint64_t b = 0; b < QUEUE_BLOCKS && !w->failed; b++) {
        uint64_t off = w->start + b * PAGE;
        if (pread(w->fd, buf, PAGE, (off_t)off) != PAGE) {
            fail(w->d->pci, "queue pread");
            w->failed = 1;
            break;
        }
        w->ops++;
        for (size_t i = 0; i < PAGE; i++)
            if (buf[i] != pattern_byte(w->d->seed, off + i))
                w->mismatches++;
    }
    free(buf);
    return NULL;
}

/* Every hardware queue at once: QUEUE_THREADS pinned threads per queue,
 * each on its own stretch after the integrity region. A thread's
 * requests are one at a time and its stretches' neighbours belong to
 * other threads, so the driver never merges them: each queue is sent
 * exactly its threads' requests. */
static void phase_queues(const struct disk *d)
{
    uint64_t start = 2 * (param_mib << 20);
    uint64_t stretch = QUEUE_BLOCKS * PAGE;
    unsigned workers = d->queues * QUEUE_THREADS;
    int fd = open(d->path, O_RDWR | O_DIRECT);
    if (fd < 0) {
        fail(d->pci, "open queues");
        return;
    }
    for (unsigned q = 0; q < d->queues; q++)
        if (d->queue_cpu[q] < 0) {
            errno = ENXIO;
            fail(d->pci, "a queue no CPU maps to");
            close(fd);
            return;
        }
    struct queue_worker w[MAX_QUEUES * QUEUE_THREADS];
    pthread_t t[MAX_QUEUES * QUEUE_THREADS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, workers);
    uint64_t irq0[MAX_QUEUES];
    for (unsigned q = 0; q < d->queues; q++)
        irq0[q] = queue_irqs(d, q);
    for (unsigned i = 0; i < workers; i++) {
        w[i] = (struct queue_worker){.d = d, .fd = fd, .cpu = d->queue_cpu[i / QUEUE_THREADS],
                                     .start = start + i * stretch, .go = &go};
        pthread_create(&t[i], NULL, queue_worker_main, &w[i]);
    }
    int failed = 0;
    uint64_t mismatches = 0;
    for (unsigned i = 0; i < workers; i++) {
        pthread_join(t[i], NULL);
        failed |= w[i].failed;
        mismatches += w[i].mismatches;
    }
    pthread_barrier_destroy(&go);
    close(fd);
    for (unsigned q = 0; q < d->queues; q++) {
        uint64_t ops = 0;
        for (unsigned i = q * QUEUE_THREADS; i < (q + 1) * QUEUE_THREADS; i++)
            ops += w[i].ops;
        printf("CINT disk=%s phase=queue queue=%u cpu=%d requests=%llu bytes=%llu irqs=%llu\n",
               d->pci, q, d->queue_cpu[q], (unsigned long long)ops,
               (unsigned long long)(QUEUE_THREADS * stretch),
               (unsigned long long)(queue_irqs(d, q) - irq0[q]));
    }
    printf("CINT disk=%s phase=queues ok=%d queues=%u start=%llu bytes=%llu mismatches=%llu\n",
           d->pci, !failed && mismatches == 0, d->queues, (unsigned long long)start,
           (unsigned long long)(workers * stretch), (unsigned long long)mismatches);
    fflush(stdout);
}

/* Dispatches requests to the device as they come. The default mq-deadline
 * holds every lower-class request while an RT one is in flight, which
 * would starve the batch readers behind the RT reader and leave the
 * device with one request at a time: the mixed phase wants both in
 * flight together, so the policy, not the guest's scheduler, decides. */
#define FLOOD_THREADS 32
#define FLOOD_BLOCK (64 * 1024)

struct flooder {
    const struct disk *d;
    uint64_t blocks;      /* of the disk */
    uint64_t deadline_ns;
    unsigned index;
    uint64_t writes;
};

/* One writer: back-to-back O_DIRECT writes of a block at pseudo-random
 * places, so there is always one request of its own in flight. */
static void *flooder_main(void *arg)
{
    struct flooder *f = arg;
    int fd = open(f->d->path, O_WRONLY | O_DIRECT);
    if (fd < 0) {
        fail(f->d->pci, "flood open O_DIRECT");
        return NULL;
    }
    uint8_t *buf;
    if (posix_memalign((void **)&buf, PAGE, FLOOD_BLOCK) != 0) {
        close(fd);
        return NULL;
    }
    fill_pattern(buf, f->d->seed + f->index, 0, FLOOD_BLOCK);
    uint64_t x = f->index;
    while (now_ns() < f->deadline_ns) {
        x = splitmix64(x);
        off_t at = (off_t)((x % f->blocks) * FLOOD_BLOCK);
        if (pwrite(fd, buf, FLOOD_BLOCK, at) != FLOOD_BLOCK) {
            fail(f->d->pci, "flood pwrite");
            break;
        }
        f->writes++;
    }
    free(buf);
    close(fd);
    return NULL;
}

/* Keeps the disk busy until the host kills QEMU (or param_flood seconds
 * pass, so a host that never kills still gets a guest that ends). */
static void phase_flood(const struct disk *d)
{
    int fd = open(d->path, O_RDONLY);
    uint64_t size = 0;
    if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) != 0) {
        fail(d->pci, "flood disk size");
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    struct flooder f[FLOOD_THREADS];
    pthread_t t[FLOOD_THREADS];
    uint64_t deadline = now_ns() + param_flood * 1000000000ull;
    for (unsigned i = 0; i < FLOOD_THREADS; i++) {
        f[i] = (struct flooder){ .d = d, .blocks = size / FLOOD_BLOCK, .deadline_ns = deadline,
                                 .index = i };
        pthread_create(&t[i], NULL, flooder_main, &f[i]);
    }
    while (now_ns() < deadline) {
        usleep(100000);
        printf("CINT disk=%s phase=flood in_flight=%llu requests=%llu\n", d->pci,
               (unsigned long long)disk_in_flight(d), (unsigned long long)disk_requests(d));
    }
    uint64_t writes = 0;
    for (unsigned i = 0; i < FLOOD_THREADS; i++) {
        pthread_join(t[i], NULL);
        writes += f[i].writes;
    }
    printf("CINT disk=%s phase=flood_end writes=%llu\n", d->pci, (unsigned long long)writes);
}

static int use_no_scheduler(const struct disk *d)
{
    char path[300];
    snprintf(path, sizeof path, "/sys/block/%.255s/queue/scheduler", d->name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs("none", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Fills in the virtio device name and PCI address behind /sys/block/<name>. */
static int describe(struct disk *d)
{
    char link[300], real[PATH_MAX];
    snprintf(d->path, sizeof d->path, "/dev/%.255s", d->name);
    snprintf(link, sizeof link, "/sys/block/%.255s/device", d->name);
    if (!realpath(link, real))
        return -1;
    /* .../0000:00:10.0/virtio2 */
    char *virtio = strrchr(real, '/');
    if (!virtio)
        return -1;
    *virtio++ = 0;
    char *pci = strrchr(real, '/');
    if (!pci)
        return -1;
    pci++;
    snprintf(d->virtio, sizeof d->virtio, "%s", virtio);
    snprintf(d->pci, sizeof d->pci, "%s", pci);
    unsigned dom, bus, slot, fn;
    if (sscanf(d->pci, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4)
        return -1;
    d->slot = slot;
    d->seed = param_seed + slot;
    /* /sys/block/<name>/mq/<q>/cpu_list ("0" or "0, 1"): one folder per
     * hardware queue, naming the CPUs blk-mq maps to it. */
    d->queues = 0;
    for (unsigned q = 0; q < MAX_QUEUES; q++) {
        char path[300];
        snprintf(path, sizeof path, "/sys/block/%.200s/mq/%u/cpu_list", d->name, q);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int cpu = -1;
        if (fscanf(f, "%d", &cpu) != 1)
            cpu = -1;
        fclose(f);
        d->queue_cpu[q] = cpu;
        d->queues = q + 1;
    }
    return 0;
}

static int cmp_disk(const void *a, const void *b)
{
    const struct disk *x = a, *y = b;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);
}

static int find_disks(struct disk *disks)
{
    int n = 0;
    DIR *dir = opendir("/sys/block");
    if (!dir)
        return 0;
    struct dirent *e;
    while ((e = readdir(dir)) && n < MAX_DISKS)
        if (strncmp(e->d_name, "vd", 2) == 0)
            snprintf(disks[n++].name, sizeof disks[0].name, "%s", e->d_name);
    closedir(dir);
    /* readdir's order is arbitrary: run the disks in a stable order. */
    qsort(disks, (size_t)n, sizeof *disks, cmp_disk);
    return n;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    read_cmdline();
    struct disk disks[MAX_DISKS];
    int n = 0;
    /* Probing is asynchronous: wait up to 60 s for every disk to appear. */
    for (int tries = 0; tries < 600; tries++) {
        memset(disks, 0, sizeof disks);
        n = find_disks(disks);
        if ((uint64_t)n >= param_disks)
            break;
        usleep(100000);
    }
    printf("CINT disks=%d expected=%llu\n", n, (unsigned long long)param_disks);
    pthread_t watchdog;
    pthread_create(&watchdog, NULL, watchdog_main, NULL);
    for (int i = 0; i < n; i++) {
        struct disk *d = &disks[i];
        if (describe(d) != 0) {
            fail(d->name, "describe");
            continue;
        }
        if (use_no_scheduler(d) != 0)
            fail(d->pci, "setting the I/O scheduler to none");
        printf("CINT disk=%s name=%s virtio=%s seed=%llu queues=%u\n", d->pci, d->name,
               d->virtio, (unsigned long long)d->seed, d->queues);
        atomic_store(&current_disk, d);
        if (param_flood) {
            phase_flood(d);
            break;
        }
        phase_integrity(d);
        phase_mixed(d);
        if (d->queues > 1)
            phase_queues(d);
    }
    atomic_store(&current_disk, NULL);
    /* Totals last, once every disk is idle: these are the numbers the host
     * compares with each back end's count of interrupts sent. */
    for (int i = 0; i < n; i++) {
        const struct disk *d = &disks[i];
        /* Per queue: its vector's interrupts, and the CPU they go to. */
        char per_queue[MAX_QUEUES * 21 + 1] = "", cpus[MAX_QUEUES * 12 + 1] = "";
        size_t len = 0, cpus_len = 0;
        for (unsigned q = 0; q < d->queues; q++) {
            len += (size_t)snprintf(per_queue + len, sizeof per_queue - len, "%s%llu",
                                    q ? "," : "", (unsigned long long)queue_irqs(d, q));
            cpus_len += (size_t)snprintf(cpus + cpus_len, sizeof cpus - cpus_len, "%s%d",
                                         q ? "," : "", queue_irq_cpu(d, q));
        }
        printf("CINT disk=%s phase=end irqs=%llu config_irqs=%llu requests=%llu queue_irqs=%s "
               "queue_irq_cpus=%s\n",
               d->pci, (unsigned long long)irq_count(d, "req."),
               (unsigned long long)irq_count(d, "config"),
               (unsigned long long)disk_requests(d), per_queue, cpus);
    }
    printf("CINT done\n");
    return 0;
}
