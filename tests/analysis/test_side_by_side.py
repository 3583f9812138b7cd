"""side_by_side runs two analysis steps at once: both results come back in order, and an exception of
either reaches the caller only after both steps have stopped."""

import threading
import time

import pytest

from launchgap.analysis.side_by_side import side_by_side


def test_both_results_come_back_first_then_second_and_the_first_ran_in_another_thread():
    callers = {}

    def first():
        callers["first"] = threading.get_ident()
        return [1, 2]

    def second():
        callers["second"] = threading.get_ident()
        return "two"

    assert side_by_side(first, second) == ([1, 2], "two")
    assert callers["second"] == threading.get_ident()
    assert callers["first"] != threading.get_ident()


def test_the_two_steps_overlap_in_time():
    # each waits for the other to have started: run one after the other, this would time out
    started = [threading.Event(), threading.Event()]

    def step(mine: int):
        started[mine].set()
        return started[1 - mine].wait(timeout=60)

    assert side_by_side(lambda: step(0), lambda: step(1)) == (True, True)


def test_an_exception_of_the_first_is_raised_here():
    def first():
        raise ValueError("first failed")

    with pytest.raises(ValueError, match="first failed"):
        side_by_side(first, lambda: 2)


def test_an_exception_of_the_second_waits_for_the_first_to_finish():
    finished = []

    def first():
        time.sleep(0.3)
        finished.append("first")
        return 1

    def second():
        raise KeyError("second failed")

    with pytest.raises(KeyError, match="second failed"):
        side_by_side(first, second)
    assert finished == ["first"]
