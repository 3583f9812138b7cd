"""side_by_side runs two analysis steps at once: both results come back in order; an exception of the
first reaches the caller once both are done, one of the second at once."""

import threading

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


def test_an_exception_of_the_second_is_raised_at_once_without_waiting_for_the_first():
    # Ctrl-C in a long report: the caller's clean-up must not wait for the worker's step to end
    release = threading.Event()
    finished = []

    def first():
        release.wait(timeout=60)
        finished.append("first")

    def second():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        side_by_side(first, second)
    assert finished == []  # the first was still running when the interrupt reached the caller
    release.set()
