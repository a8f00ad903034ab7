"""cinterrupts.Policy against the Rust policies: the recorded sequence of
crates/python/tests/policy_trace.rs (every decision `AnyPolicy` took),
replayed call by call; and the C ABI's checks, as Python errors."""

import json
from pathlib import Path

import pytest

import cinterrupts
from cinterrupts import Irq, Policy

TRACE = Path(__file__).parent / "data" / "policy_trace.json"


def runs():
    return json.loads(TRACE.read_text())["runs"]


@pytest.mark.parametrize("run", runs(), ids=lambda r: f"{r['kind']}{sorted(r['params'].items())}")
def test_python_decides_as_the_rust_policy_on_the_recorded_sequence(run):
    policy = Policy(run["kind"], **run["params"])
    decisions = {0: 0, 1: 0, 2: 0}
    for event in run["events"]:
        what = event[0]
        if what == "submit":
            _, now, hint, seq = event
            assert policy.on_submit(now, hint) == seq
        elif what == "complete":
            _, now, hint, seq, irq = event
            got = policy.on_complete(now, hint, seq=seq)
            assert got == irq, event
            decisions[irq] += 1
        elif what == "timer":
            _, now, irq = event
            assert policy.on_timer(now) == irq, event
        else:
            assert policy.next_deadline() == event[1], event
    # Every run interrupts; the sequence is long enough to matter.
    assert decisions[Irq.FULL] > 0 and sum(decisions.values()) > 100


def test_the_oldest_request_completes_when_no_seq_is_given():
    policy = Policy("none")
    first = policy.on_submit(0)
    second = policy.on_submit(10, "urgent")
    assert policy.in_flight == 2
    assert policy.on_complete(20) == Irq.FULL
    assert policy.in_flight == 1
    # `first` is gone: completing it again is the C ABI's ESEQ.
    with pytest.raises(cinterrupts.InputError, match="never handed out or already completed"):
        policy.on_complete(30, seq=first)
    assert policy.on_complete(40, "urgent", seq=second) == Irq.FULL
    with pytest.raises(cinterrupts.InputError, match="no request in flight"):
        policy.on_complete(50)


def test_the_c_abi_checks_reach_python():
    policy = Policy("adaptive", delta="6us", thr=4)
    policy.on_submit(1_000)
    with pytest.raises(cinterrupts.InputError, match="time went backwards"):
        policy.on_submit(999)
    with pytest.raises(cinterrupts.InputError, match="unknown hint bits"):
        policy.on_submit(2_000, 8)
    with pytest.raises(cinterrupts.InputError, match="hint 'soon'"):
        policy.on_submit(2_000, "soon")
    # Holds below thr, then fires at the deadline delta after the last completion.
    assert policy.on_complete(3_000) == Irq.NONE
    assert policy.next_deadline() == 9_000
    assert policy.on_timer(9_000) == Irq.FULL
    assert policy.next_deadline() is None


def test_parameters_are_read_as_a_scenario_file_reads_them():
    assert repr(Policy("cinterrupts", delta="6us", thr=32, ooo=False)) == \
        'Policy("cinterrupts", delta=6us, thr=32, ooo=false)'
    with pytest.raises(cinterrupts.InputError, match=r"strategy\.policy\.thr: must be at least 1"):
        Policy("adaptive", thr=0)
    with pytest.raises(cinterrupts.InputError, match='not a key of kind "adaptive"'):
        Policy("adaptive", ooo=True)
    with pytest.raises(cinterrupts.InputError, match="polling mode"):
        Policy("poll")
    with pytest.raises(cinterrupts.InputError, match="expected a number"):
        Policy("adaptive", delta=[6])
