/*
 * How often an fsync of pages overwritten in place commits ext4's journal.
 *
 * An overwrite changes no block mapping and no size, only the file's
 * modification time. Linux takes that time from the coarse clock, which
 * moves once per scheduler tick (fs/inode.c `current_time`,
 * `current_kernel_time64`, truncated to the superblock's granularity),
 * and `file_update_time` dirties the inode only when the time it would
 * write differs from the one it holds. ext4's fsync (fs/ext4/fsync.c
 * `ext4_sync_file`) writes the data back, then waits for the journal
 * transaction that last changed the inode (`ei->i_sync_tid`,
 * `jbd2_complete_transaction`): committed already, nothing to write. So
 * fsync after every 4 KiB overwrite should commit once per tick, not once
 * per call; fdatasync never (the times alone are not data's metadata,
 * `i_datasync_tid`); and with a pause longer than a tick before each
 * overwrite, fsync should commit every time.
 *
 * Without a journal (ext4 made with ^has_journal: its sysfs `journal_task`
 * reads `<none>`) both calls write the inode's block instead, where its
 * times changed (`ext4_fsync_nojournal`; fdatasync too, through the
 * metadata buffers the inode's mapping holds): the tick shows the same
 * way, as one 4 KiB block a tick beyond the pages.
 *
 * The program writes one 4 KiB page in place and calls fsync or
 * fdatasync, many times, and times the calls. A call that commits takes
 * a second device write and waits for it, so it is slow: it prints the
 * share of calls slower than twice the median and the median time
 * between two slow calls. Where ext4 exposes the file system's
 * `lifetime_write_kbytes` in sysfs, it also prints the KiB the file
 * system wrote to its device per call (the 4 KiB page, and a share of
 * the commits, printed also in all beyond the pages; whatever else
 * writes to that file system meanwhile counts too, so run it on a quiet
 * machine: it first prints what 500 ms without calls wrote).
 *
 * With `direct` after the file, the overwrites are O_DIRECT (the file is
 * laid out through the page cache first): a direct write changes the
 * file's times as a buffered one does (`file_update_time` from the
 * direct-I/O write path), so the same once a tick should show.
 *
 *   cc -O2 -o fsync_journal_per_tick fsync_journal_per_tick.c
 *   ./fsync_journal_per_tick [FILE on ext4 [direct]]   # default: a file in the current directory
 *
 * docs/HOST-COSTS.md ("The journal commit of an fsync") quotes what it
 * printed on this project's machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define CALLS 2000

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* The sysfs file counting what the file system of `fd` wrote, KiB. */
static char written_path[512];

static void find_written(int fd)
{
	struct stat st;
	char link[256], target[256];
	if (fstat(fd, &st) != 0)
		return;
	snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	ssize_t n = readlink(link, target, sizeof target - 1);
	if (n <= 0)
		return;
	target[n] = 0;
	const char *name = strrchr(target, '/');
	snprintf(written_path, sizeof written_path, "/sys/fs/ext4/%s/lifetime_write_kbytes",
		 name ? name + 1 : target);
	if (access(written_path, R_OK) != 0)
		written_path[0] = 0;
}

static long written_kib(void)
{
	long kib = -1;
	FILE *f = written_path[0] ? fopen(written_path, "r") : NULL;
	if (f) {
		if (fscanf(f, "%ld", &kib) != 1)
			kib = -1;
		fclose(f);
	}
	return kib;
}

/* One run: `calls` (at most CALLS) overwrites of one page, each followed
 * by the call. */
static void run(int fd, const char *what, int datasync, long pause_ns, int calls)
{
	static long took[CALLS], at[CALLS], sorted[CALLS], gaps[CALLS];
	/* Aligned for O_DIRECT. */
	static char page[4096] __attribute__((aligned(4096)));
	memset(page, 'c', sizeof page);
	long kib_before = written_kib();
	long start = now_ns();
	for (int i = 0; i < calls; i++) {
		if (pause_ns > 0) {
			struct timespec p = { 0, pause_ns };
			nanosleep(&p, NULL);
		}
		if (pwrite(fd, page, sizeof page, (i % 64) * 4096L) != sizeof page) {
			perror("pwrite");
			exit(1);
		}
		long t0 = now_ns();
		if ((datasync ? fdatasync(fd) : fsync(fd)) != 0) {
			perror("fsync");
			exit(1);
		}
		took[i] = now_ns() - t0;
		at[i] = t0 - start;
	}
	memcpy(sorted, took, calls * sizeof took[0]);
	qsort(sorted, calls, sizeof sorted[0], by_value);
	long median = sorted[calls / 2];
	int slow = 0, ngaps = 0;
	long last = -1;
	for (int i = 0; i < calls; i++) {
		if (took[i] <= 2 * median)
			continue;
		slow++;
		if (last >= 0)
			gaps[ngaps++] = at[i] - last;
		last = at[i];
	}
	long kib_after = written_kib();
	qsort(gaps, ngaps, sizeof gaps[0], by_value);
	double span_ms = (double)(now_ns() - start) / 1e6;
	printf("%-28s %5d calls in %7.1f ms, median %6.1f us, slow %5.1f%%, "
	       "median gap between slow calls ",
	       what, calls, span_ms, median / 1e3, 100.0 * slow / calls);
	if (ngaps)
		printf("%.2f ms", gaps[ngaps / 2] / 1e6);
	else
		printf("-");
	if (kib_before >= 0 && kib_after >= kib_before)
		printf(", %.2f KiB written per call, %.1f KiB beyond the pages",
		       (double)(kib_after - kib_before) / calls,
		       (double)(kib_after - kib_before) - 4.0 * calls);
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "fsync_journal_per_tick.dat";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	char page[4096];
	memset(page, 'a', sizeof page);
	for (int i = 0; i < 64; i++)
		if (pwrite(fd, page, sizeof page, i * 4096L) != sizeof page) {
			perror("pwrite");
			return 1;
		}
	fsync(fd);
	find_written(fd);
	long idle = written_kib();
	usleep(500000);
	if (idle >= 0)
		printf("%-28s %ld KiB written in 500 ms with no calls\n", "idle", written_kib() - idle);
	if (argc > 2 && strcmp(argv[2], "direct") == 0) {
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) != 0) {
			perror("O_DIRECT");
			return 1;
		}
		printf("overwrites with O_DIRECT\n");
	}
	run(fd, "fsync after each overwrite", 0, 0, CALLS);
	run(fd, "fdatasync after each", 1, 0, CALLS);
	run(fd, "fsync, 5 ms pause before", 0, 5000000L, 400);
	close(fd);
	unlink(path);
	return 0;
}
