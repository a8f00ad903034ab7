"""cinterrupts.ModeSelect: the per-request completion-mode selector of
docs/ALGORITHMS.md section 10, on the energy study's machine, through the
C ABI."""

import pytest

import cinterrupts
from cinterrupts import ModeSelect

US = 1_000


def test_fast_reads_spin_and_slow_ones_sleep_until_the_interrupt():
    select = ModeSelect()
    assert select.governor == "menu"
    assert select.idle_states[0] == "POLL"
    # Nothing measured: spin, and learn the class's time.
    assert select.choose(4096) == ("poll", 0)
    select.record(4096, 8 * US)
    assert select.choose(4096) == ("poll", 0)
    select.record(1 << 20, 2_000 * US)
    assert select.choose(1 << 20) == ("interrupt", 0)
    # Writes are a class of their own.
    assert select.choose(1 << 20, write=True) == ("poll", 0)
    # A contended core is given away; a polled-only queue sleeps instead.
    assert select.choose(4096, contended=True) == ("interrupt", 0)
    mode, sleep = select.choose(4096, contended=True, can_interrupt=False)
    assert (mode, sleep) == ("sleep", 4 * US)


def test_waits_seen_to_leave_the_core_in_poll_outvote_the_governors_rule():
    select = ModeSelect()
    select.record(1 << 20, 2_000 * US)
    assert select.choose(1 << 20) == ("interrupt", 0)
    for _ in range(5):
        select.record_idle(1 << 20, "interrupt", "POLL")
    assert select.choose(1 << 20) == ("interrupt", 0)
    select.record_idle(1 << 20, "interrupt", 0)
    mode, _ = select.choose(1 << 20)
    assert mode != "interrupt"
    # A polled wait teaches nothing.
    select.record_idle(4096, "poll", "C6")


def test_the_governor_is_the_hosts_or_the_one_given():
    assert ModeSelect(governor="menu-no-iowait").governor == "menu-no-iowait"
    assert "menu-no-iowait" in repr(ModeSelect(governor="menu-no-iowait"))


def test_bad_input_is_an_input_error_naming_what_is_wrong():
    with pytest.raises(cinterrupts.InputError, match="lacks"):
        ModeSelect(host="xeon-e5-2660v4")
    with pytest.raises(cinterrupts.InputError, match="host.model"):
        ModeSelect(host="no-such-host")
    with pytest.raises(cinterrupts.InputError, match="governor"):
        ModeSelect(governor="ondemand")
    select = ModeSelect()
    with pytest.raises(cinterrupts.InputError, match='no idle state "C99"'):
        select.record_idle(4096, "interrupt", "C99")
    with pytest.raises(cinterrupts.InputError, match="parameter out of range"):
        select.record_idle(4096, "interrupt", 42)
    with pytest.raises(cinterrupts.InputError, match="mode"):
        select.record_idle(4096, "spin", 0)
    with pytest.raises(cinterrupts.InputError, match="name or index"):
        select.record_idle(4096, "interrupt", 1.5)
    # A sleep's wait names the sleep it took (choose's); none is refused.
    with pytest.raises(cinterrupts.InputError, match="parameter out of range"):
        select.record_idle(4096, "sleep", "C1")
    select.record_idle(4096, "sleep", "C1", sleep_ns=5 * US)


def test_a_caller_that_samples_its_waits_keeps_what_they_taught_longer():
    def after(one_in, completions):
        select = ModeSelect()
        select.observe_idle_one_in(one_in)
        select.record(1 << 20, 2_000 * US)
        for _ in range(20):
            select.record_idle(1 << 20, "interrupt", "POLL")
        for _ in range(completions):
            select.record(1 << 20, 2_000 * US)
        return select.choose(1 << 20)[0]

    assert after(1, 0) != "interrupt"
    # The governor's rule votes again every 64 completions, and wins back.
    assert after(1, 64 * 10) == "interrupt"
    # Seen one wait in sixteen, its votes come sixteen times as far apart.
    assert after(16, 64 * 10) != "interrupt"
    assert after(16, 64 * 16 * 10) == "interrupt"
    with pytest.raises(cinterrupts.InputError, match="parameter out of range"):
        ModeSelect().observe_idle_one_in(0)
