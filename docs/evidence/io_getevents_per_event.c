/*
 * What io_getevents costs per event, apart from the call itself.
 *
 * Buffered reads through Linux AIO complete inside io_submit, so when the
 * reap call runs every event is already in the completion ring: timing
 * io_getevents(min_nr = nr = n) for several n and fitting a line gives
 * the per-call cost (intercept, with the system call) and the per-event
 * cost (slope: the kernel copies the 32-byte events to user space in one
 * copy_to_user per ring page, fs/aio.c aio_read_events_ring).
 *
 *   cc -O2 -o io_getevents_per_event io_getevents_per_event.c
 *   ./io_getevents_per_event            # prints n, mean ns, min ns, then the fit
 *
 * docs/HOST-COSTS.md quotes what it printed on this project's machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 128 /* one ring page holds 128 events: stay within it */
#define ROUNDS 20000

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static char buf[MAX_EVENTS][4096];

int main(void)
{
	char path[] = "/tmp/io_getevents_per_event.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	for (int i = 0; i < MAX_EVENTS; i++) {
		memset(buf[i], i, sizeof buf[i]);
		if (write(fd, buf[i], sizeof buf[i]) != sizeof buf[i]) {
			perror("write");
			return 1;
		}
	}
	aio_context_t ctx = 0;
	if (syscall(SYS_io_setup, 4 * MAX_EVENTS, &ctx)) {
		perror("io_setup");
		return 1;
	}
	static const int sizes[] = {1, 8, 16, 32, 64, 96, 128};
	const int nsizes = sizeof sizes / sizeof sizes[0];
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (int s = 0; s < nsizes; s++) {
		int n = sizes[s];
		struct iocb cb[MAX_EVENTS], *cbs[MAX_EVENTS];
		struct io_event ev[MAX_EVENTS];
		long total = 0, best = -1;
		for (int r = 0; r < ROUNDS; r++) {
			for (int i = 0; i < n; i++) {
				memset(&cb[i], 0, sizeof cb[i]);
				cb[i].aio_fildes = fd;
				cb[i].aio_lio_opcode = IOCB_CMD_PREAD;
				cb[i].aio_buf = (unsigned long)buf[i];
				cb[i].aio_nbytes = sizeof buf[i];
				cb[i].aio_offset = (long)i * sizeof buf[i];
				cbs[i] = &cb[i];
			}
			if (syscall(SYS_io_submit, ctx, n, cbs) != n) {
				perror("io_submit");
				return 1;
			}
			long t0 = now_ns();
			long got = syscall(SYS_io_getevents, ctx, n, n, ev, NULL);
			long t1 = now_ns();
			if (got != n) {
				fprintf(stderr, "io_getevents returned %ld of %d\n", got, n);
				return 1;
			}
			total += t1 - t0;
			if (best < 0 || t1 - t0 < best)
				best = t1 - t0;
		}
		double mean = (double)total / ROUNDS;
		printf("%4d events: mean %7.1f ns, min %5ld ns\n", n, mean, best);
		sx += n;
		sy += mean;
		sxx += (double)n * n;
		sxy += n * mean;
	}
	double slope = (nsizes * sxy - sx * sy) / (nsizes * sxx - sx * sx);
	double intercept = (sy - slope * sx) / nsizes;
	printf("fit on the means: %.1f ns per call (with the system call), %.2f ns per event\n",
	       intercept, slope);
	return 0;
}
