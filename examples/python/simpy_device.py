"""A SimPy model of an NVMe-like device whose completion interrupts are
decided by cinterrupts.Policy, the policy library a real device, an
emulator or a hypervisor would embed.

Two request streams share one completion queue: a latency-sensitive reader
that submits one Urgent request at a time and waits for it, and a
throughput stream that keeps 32 unmarked requests in flight. The device
completes each request after its service time and asks the policy whether
to interrupt; the policy's timer fires at the deadline it asks for. An
interrupt reaps every completed entry (full) or only the Urgent ones
(urgent-only), as the driver side of calibrated interrupts does.

Run: python examples/python/simpy_device.py [--duration-us 20000] [--seed 1]
Prints one line per strategy: interrupts per I/O, the reader's mean and
99th-percentile latency, the throughput stream's I/Os per second.
"""

import argparse
import random
import statistics

import simpy

from cinterrupts import Irq, Policy

STRATEGIES = [
    ("none", {}),
    ("adaptive", {"delta": "6us", "thr": 32}),
    ("cinterrupts", {"delta": "6us", "thr": 32}),
]


class Device:
    """One queue pair: requests complete after their service time; the
    policy decides when the host hears about them."""

    def __init__(self, env, policy, rng, service_ns=10_000, jitter_ns=2_000):
        self.env = env
        self.policy = policy
        self.rng = rng
        self.service_ns = service_ns
        self.jitter_ns = jitter_ns
        self.completed = []  # (seq, hint, delivered event) waiting for an interrupt
        self.interrupts = 0
        self.armed_for = None  # the deadline a timer process sleeps until

    def submit(self, hint):
        """Submits a request; the returned event fires when the host reaps it."""
        seq = self.policy.on_submit(self.env.now, hint)
        delivered = self.env.event()
        self.env.process(self._serve(seq, hint, delivered))
        self._arm()
        return delivered

    def _serve(self, seq, hint, delivered):
        yield self.env.timeout(self.service_ns + int(self.rng.expovariate(1 / self.jitter_ns)))
        self.completed.append((seq, hint, delivered))
        self._interrupt(self.policy.on_complete(self.env.now, hint, seq=seq))

    def _arm(self):
        deadline = self.policy.next_deadline()
        if deadline is not None and (self.armed_for is None or deadline < self.armed_for):
            self.armed_for = deadline
            self.env.process(self._timer(deadline))

    def _timer(self, deadline):
        yield self.env.timeout(max(0, deadline - self.env.now))
        if self.armed_for == deadline:
            self.armed_for = None
        pending = self.policy.next_deadline()
        if pending is not None and pending <= self.env.now:
            self._interrupt(self.policy.on_timer(self.env.now))
        self._arm()

    def _interrupt(self, irq):
        self._arm()
        if irq == Irq.NONE:
            return
        self.interrupts += 1
        reap = [c for c in self.completed if irq == Irq.FULL or c[1] == "urgent"]
        self.completed = [c for c in self.completed if c not in reap]
        for _, _, delivered in reap:
            delivered.succeed()


def reader(env, device, latencies, think_ns=2_000):
    while True:
        start = env.now
        yield device.submit("urgent")
        latencies.append(env.now - start)
        yield env.timeout(think_ns)


def streamer(env, device, done, depth=32):
    def one():
        while True:
            yield device.submit(None)
            done[0] += 1

    for _ in range(depth):
        env.process(one())
    yield env.timeout(0)


def run(kind, params, duration_ns, seed):
    env = simpy.Environment()
    device = Device(env, Policy(kind, **params), random.Random(seed))
    latencies, streamed = [], [0]
    env.process(reader(env, device, latencies))
    env.process(streamer(env, device, streamed))
    env.run(until=duration_ns)
    ios = len(latencies) + streamed[0]
    return {
        "strategy": kind,
        "irqs_per_io": device.interrupts / ios,
        "reader_mean_us": statistics.fmean(latencies) / 1_000,
        "reader_p99_us": statistics.quantiles(latencies, n=100)[98] / 1_000,
        "stream_iops": streamed[0] / (duration_ns / 1e9),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration-us", type=int, default=20_000, help="simulated time")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{'strategy':<12} {'IRQ/IO':>7} {'reader mean us':>15} {'reader p99 us':>14} {'stream IOPS':>12}")
    for kind, params in STRATEGIES:
        r = run(kind, params, args.duration_us * 1_000, args.seed)
        print(f"{r['strategy']:<12} {r['irqs_per_io']:>7.3f} {r['reader_mean_us']:>15.2f} "
              f"{r['reader_p99_us']:>14.2f} {r['stream_iops']:>12.0f}")


if __name__ == "__main__":
    main()
