/*
 * What reading cpuidle's entry counters costs a process, and whether one
 * blocking wait on an otherwise idle CPU shows as exactly one entry.
 *
 * `cint emu`'s mode selector learns the idle state its waits reach from
 * the counters `/sys/devices/system/cpu/cpuN/cpuidle/stateK/usage`
 * (crates/emu/src/idle_watch.rs): it reads every state's counter as one
 * wait ends and again as the next ends, and takes the state whose counter
 * rose by one, where only one did. Linux increments a state's `usage`
 * once per entry (drivers/cpuidle/cpuidle.c `cpuidle_enter_state`:
 * `dev->states_usage[entered_state].usage++`), and a thread pinned to
 * the CPU keeps it out of idle while it runs, so between the two reads the
 * CPU idles only while the thread blocks. Each read is a system call
 * through sysfs (`show_state_usage`), whose cost decides how often the
 * emulator can afford to look.
 *
 * The program pins itself to CPU `cpu` (default 0), then
 *  1. times 100 000 re-reads (pread at offset 0) of every state's
 *     counter and prints the cost of one;
 *  2. 1 000 times: reads every counter, sleeps `sleep_us` (default 200)
 *     with nanosleep, reads them again, and sorts the sleeps by what rose:
 *     one state's counter by one, one state's by more (re-entered: POLL
 *     after its time limit, or a wake-up that found nothing to run), POLL
 *     and one deeper state (POLL's limit ran out, the governor picked
 *     again), or anything else; and per state how often it was the one
 *     the watch would take (the deeper one, else POLL).
 *
 *   cc -O2 -o cpuidle_usage_per_wait cpuidle_usage_per_wait.c
 *   ./cpuidle_usage_per_wait [cpu] [sleep_us]
 *
 * docs/EMULATOR-DESIGN.md ("The idle state of a selector's wait") quotes
 * what it printed on this project's machine.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_STATES 10

static int fds[MAX_STATES];
static char names[MAX_STATES][64];
static int nstates;

static unsigned long long read_usage(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0) {
		perror("pread");
		exit(1);
	}
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

static void read_all(unsigned long long *out)
{
	for (int k = 0; k < nstates; k++)
		out[k] = read_usage(fds[k]);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 ? atoi(argv[1]) : 0;
	long sleep_us = argc > 2 ? atol(argv[2]) : 200;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	for (nstates = 0; nstates < MAX_STATES; nstates++) {
		char path[128];
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/name", cpu, nstates);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		if (!fgets(names[nstates], sizeof names[nstates], f))
			names[nstates][0] = 0;
		fclose(f);
		names[nstates][strcspn(names[nstates], "\n")] = 0;
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/usage", cpu, nstates);
		fds[nstates] = open(path, O_RDONLY);
		if (fds[nstates] < 0) {
			perror(path);
			return 1;
		}
	}
	if (nstates == 0) {
		printf("CPU %d has no cpuidle states\n", cpu);
		return 0;
	}
	unsigned long long a[MAX_STATES], b[MAX_STATES];
	int reads = 100000;
	double t0 = now_ns();
	for (int i = 0; i < reads; i++)
		read_usage(fds[i % nstates]);
	printf("CPU %d, %d states; one counter read: %.0f ns\n", cpu, nstates,
	       (now_ns() - t0) / reads);

	int once = 0, again = 0, after_poll = 0, other = 0, waits = 1000;
	int per_state[MAX_STATES] = { 0 };
	struct timespec ts = { 0, sleep_us * 1000 };
	for (int i = 0; i < waits; i++) {
		read_all(a);
		nanosleep(&ts, NULL);
		read_all(b);
		int deep = -1, poll = -1, risen = 0, ok = 1;
		unsigned long long most = 0;
		for (int k = 0; k < nstates; k++) {
			unsigned long long d = b[k] - a[k];
			if (d == 0)
				continue;
			risen++;
			most = d > most ? d : most;
			int *slot = strcmp(names[k], "POLL") == 0 ? &poll : &deep;
			if (*slot >= 0)
				ok = 0;
			*slot = k;
		}
		int reached = deep >= 0 ? deep : poll;
		if (!ok || reached < 0) {
			other++;
			continue;
		}
		if (risen == 2)
			after_poll++;
		else if (most == 1)
			once++;
		else
			again++;
		per_state[reached]++;
	}
	printf("%ld us sleeps, of %d: one state entered once %d, one state re-entered %d, "
	       "POLL then one deeper state %d, anything else %d\n",
	       sleep_us, waits, once, again, after_poll, other);
	for (int k = 0; k < nstates; k++)
		printf("  state%d %-16s %d\n", k, names[k], per_state[k]);
	return 0;
}
