"""How long ``mtaplugin serve`` waits before restarting a part that died."""

from __future__ import annotations

from mtaplugin.supervisor import RESTART_FIRST, RESTART_HEALTHY, RESTART_MAX, restart_delay


def test_a_crash_loop_backs_off_up_to_a_minute() -> None:
    delays = []
    delay = 0.0
    for _ in range(10):
        delay = restart_delay(delay, ran_for=0.5)
        delays.append(delay)
    assert delays[:4] == [RESTART_FIRST, 2 * RESTART_FIRST, 4 * RESTART_FIRST, 8 * RESTART_FIRST]
    assert delays[-1] == RESTART_MAX


def test_a_part_that_ran_a_while_is_back_at_once_however_often_it_died() -> None:
    # kill -9 of the milter once an hour: never the minute of a crash loop
    delay = RESTART_MAX
    assert restart_delay(delay, ran_for=RESTART_HEALTHY) == RESTART_FIRST
    assert restart_delay(delay, ran_for=3600) == RESTART_FIRST
    assert restart_delay(delay, ran_for=RESTART_HEALTHY - 1) == RESTART_MAX
