/*
 * How much CPU ext4's journal thread (jbd2) spends per commit, and how
 * often it runs for one.
 *
 * In Linux an fsync that must commit wakes the journal's thread
 * (`jbd2_log_start_commit`) and sleeps until the commit ends
 * (`jbd2_log_wait_commit`); the thread writes the log, sleeps until it is
 * on the device, writes the commit block, sleeps again, and wakes the
 * caller (fs/jbd2/commit.c, `jbd2_journal_commit_transaction`). The model
 * has the caller write both blocks itself (docs/HOST-COSTS.md, "The
 * journal commit of an fsync"): this program measures what that leaves
 * out.
 *
 * It overwrites one 4 KiB page of a file and calls fsync, N times, with a
 * pause of P us before each write (more than a tick: every fsync commits),
 * and reads the journal thread's and its own CPU time and run count from
 * /proc/PID/schedstat (nanoseconds on the CPU, time waiting, runs) before
 * and after. It prints, per fsync, the journal thread's CPU and runs, the
 * caller's CPU per iteration, and the fsync's mean latency.
 *
 * This project's own ext4 has no journal; it was run on a journaled ext4
 * on a loop device backed by tmpfs (so that the backing file's writes cost
 * the journal thread nothing), set to write-through:
 *
 *   truncate -s 256M /dev/shm/j.img && mkfs.ext4 -q -F -b 4096 /dev/shm/j.img
 *   mount -o loop /dev/shm/j.img /mnt/j       # as root; say it got loop0
 *   echo "write through" > /sys/block/loop0/queue/write_cache
 *   cc -O2 -o jbd2_commit_cpu jbd2_commit_cpu.c
 *   ./jbd2_commit_cpu /mnt/j/f $(cat /sys/fs/ext4/loop0/journal_task) 500 5000
 *
 * docs/HOST-COSTS.md ("The journal commit of an fsync") quotes what it
 * printed on this project's machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sched {
	unsigned long long run_ns, wait_ns, runs;
};

static struct sched schedstat(int pid)
{
	char path[64];
	struct sched s = { 0, 0, 0 };
	snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
	FILE *f = fopen(path, "r");
	if (!f || fscanf(f, "%llu %llu %llu", &s.run_ns, &s.wait_ns, &s.runs) != 3) {
		perror(path);
		exit(1);
	}
	fclose(f);
	return s;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s FILE JBD2-PID CALLS PAUSE-US\n", argv[0]);
		return 2;
	}
	int jbd2 = atoi(argv[2]), n = atoi(argv[3]), pause_us = atoi(argv[4]);
	int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	char page[4096];
	memset(page, 1, sizeof page);
	for (int i = 0; i < 16; i++)
		pwrite(fd, page, sizeof page, i * 4096);
	fsync(fd);
	sleep(1);
	struct sched j0 = schedstat(jbd2), me0 = schedstat(getpid());
	double lat = 0;
	for (int i = 0; i < n; i++) {
		if (pause_us)
			usleep(pause_us);
		page[0] = i;
		pwrite(fd, page, sizeof page, (i % 16) * 4096);
		double t = now_ns();
		fsync(fd);
		lat += now_ns() - t;
	}
	struct sched j1 = schedstat(jbd2), me1 = schedstat(getpid());
	printf("%d fsyncs, %d us apart: jbd2 %.1f us CPU and %.2f runs per fsync; "
	       "caller %.1f us CPU per write and fsync; fsync %.1f us\n",
	       n, pause_us, (j1.run_ns - j0.run_ns) / 1e3 / n, (double)(j1.runs - j0.runs) / n,
	       (me1.run_ns - me0.run_ns) / 1e3 / n, lat / 1e3 / n);
	return 0;
}
