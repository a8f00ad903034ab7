/*
 * What ext4's journal writes for one commit: how many requests, how many
 * bytes, beyond the file's own pages.
 *
 * jbd2 without `async_commit` (Linux 5.0 fs/jbd2/commit.c
 * `jbd2_journal_commit_transaction`) writes the transaction's log blocks
 * first, a descriptor block and every metadata block the transaction
 * changed, waits for them (`wait_on_buffer` over `io_bufs`), and only
 * then writes the commit block (`journal_submit_commit_record`, then
 * `journal_wait_on_commit_record`): two writes in series. The log blocks
 * are consecutive in the journal and go out under one plug, so the block
 * layer merges them into one request.
 *
 * The program counts the requests and sectors the file system's block
 * device completed across each call (`/sys/block/DEV/stat`: write
 * requests, write merges, write sectors, flush requests), in three cases:
 *  1. overwrite one 4 KiB page in place, 20 ms after the last call (more
 *     than a tick: the file's times change), then fsync;
 *  2. the same with fdatasync (times alone need no commit);
 *  3. write a new 1 MiB file (fresh blocks allocated), then fdatasync;
 *  4. append a 1 100-byte record to a log preallocated as RocksDB
 *     preallocates its write-ahead log (`fallocate` with
 *     FALLOC_FL_KEEP_SIZE: blocks allocated, the size unchanged), then
 *     fdatasync, as RocksDB's `WriteOptions::sync` does after each write:
 *     the size grows, which fdatasync must commit (ext4_do_update_inode's
 *     `need_datasync`), while the preallocated blocks need no allocation.
 *
 * This project's own ext4 has no journal, so it was run on a journaled
 * ext4 on a loop device, its write cache set to write-through as the
 * built-in devices have none (no flush then goes with the commit):
 *
 *   truncate -s 256M /tmp/j.img && mkfs.ext4 -q -F -b 4096 /tmp/j.img
 *   mount -o loop /tmp/j.img /mnt/j       # as root; say it got loop0
 *   echo "write through" > /sys/block/loop0/queue/write_cache
 *   cc -O2 -o fsync_journal_writes fsync_journal_writes.c
 *   ./fsync_journal_writes /mnt/j loop0
 *
 * docs/HOST-COSTS.md ("The journal commit of an fsync") quotes what it
 * printed on this project's machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct counts {
	unsigned long long writes, merges, sectors, flushes;
};

static const char *dev;

static struct counts read_stat(void)
{
	char path[128];
	unsigned long long v[17] = { 0 };
	snprintf(path, sizeof path, "/sys/block/%s/stat", dev);
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(1);
	}
	for (int i = 0; i < 17; i++)
		if (fscanf(f, "%llu", &v[i]) != 1)
			break;
	fclose(f);
	/* Fields 5 to 7: write requests, merges, sectors; 16: flushes. */
	return (struct counts){ v[4], v[5], v[6], v[15] };
}

static void report(const char *what, struct counts a, struct counts b, unsigned long long data)
{
	unsigned long long sectors = b.sectors - a.sectors;
	printf("%-34s writes %llu, merged %llu, flushes %llu, %llu KiB (%llu KiB beyond the data)\n",
	       what, b.writes - a.writes, b.merges - a.merges, b.flushes - a.flushes,
	       sectors / 2, sectors / 2 - data / 1024);
}

static void overwrite(const char *dir, int datasync)
{
	char path[256], page[4096];
	snprintf(path, sizeof path, "%s/overwritten", dir);
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	memset(page, 1, sizeof page);
	for (int i = 0; i < 16; i++)
		pwrite(fd, page, sizeof page, i * 4096);
	fsync(fd);
	sleep(1);
	for (int i = 0; i < 4; i++) {
		usleep(20000);
		page[0] = i;
		pwrite(fd, page, sizeof page, (i % 16) * 4096);
		struct counts a = read_stat();
		if (datasync)
			fdatasync(fd);
		else
			fsync(fd);
		report(datasync ? "overwrite 4 KiB, fdatasync:" : "overwrite 4 KiB, fsync:", a,
		       read_stat(), 4096);
	}
	close(fd);
}

static void new_file(const char *dir)
{
	static char mib[1 << 20];
	memset(mib, 1, sizeof mib);
	for (int k = 0; k < 4; k++) {
		char path[256];
		snprintf(path, sizeof path, "%s/new.%d", dir, k);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			perror(path);
			exit(1);
		}
		/* The creation's own commit, out of the way. */
		fsync(fd);
		usleep(20000);
		if (write(fd, mib, sizeof mib) != sizeof mib) {
			perror("write");
			exit(1);
		}
		struct counts a = read_stat();
		fdatasync(fd);
		report("new 1 MiB file, fdatasync:", a, read_stat(), sizeof mib);
		close(fd);
	}
}

static void appended_log(const char *dir)
{
	char path[256], record[1100];
	snprintf(path, sizeof path, "%s/log", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 64 << 20) != 0) {
		perror("fallocate");
		exit(1);
	}
	fsync(fd);
	sleep(1);
	memset(record, 7, sizeof record);
	for (int i = 0; i < 12; i++) {
		if (write(fd, record, sizeof record) != sizeof record) {
			perror("write");
			exit(1);
		}
		struct counts a = read_stat();
		fdatasync(fd);
		/* The data is the record's page, or two where it crosses one. */
		unsigned long long offset = (unsigned long long)i * sizeof record;
		unsigned long long pages = (offset + sizeof record - 1) / 4096 - offset / 4096 + 1;
		report("append 1 100 B to a log, fdatasync:", a, read_stat(), pages * 4096);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR-ON-EXT4 BLOCK-DEVICE (e.g. /mnt/j loop0)\n", argv[0]);
		return 2;
	}
	dev = argv[2];
	overwrite(argv[1], 0);
	overwrite(argv[1], 1);
	new_file(argv[1]);
	appended_log(argv[1]);
	return 0;
}
