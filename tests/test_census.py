"""The census (tests/census.py) run on tests written to fail it: in a pytest of their own (a subprocess, so its
counts are its own), each outcome against the one worked out by hand for that test."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import REPO

pytest_plugins = ["pytester"]

CASES = """
import pytest

def helper(x):
    assert x == 1

def test_asserts():
    assert 1 + 1 == 2

def test_asserts_through_a_helper():
    helper(1)

@pytest.fixture
def checked():
    assert True
    return 1

def test_asserts_only_in_its_fixture(checked):
    pass

def test_catches_what_it_expects():
    with pytest.raises(ZeroDivisionError):
        1 / 0

def test_catches_through_the_function_form():
    pytest.raises(ZeroDivisionError, lambda: 1 / 0)

def test_nothing():
    x = 1

def test_a_loop_over_nothing():
    for x in []:
        assert x

def test_skips_for_pytorch():
    pytest.skip("PyTorch is not installed here (for the census test)")

def test_skips_for_root():
    pytest.skip("needs root")

@pytest.mark.skipif(True, reason="no GPU here (for the census test)")
def test_skips_for_a_gpu():
    assert False
"""


def outcomes(pytester: pytest.Pytester, monkeypatch, ci: str | None) -> tuple[dict[str, str], str]:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "python")]))
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest_subprocess("-p", "tests.census", "-o", "enable_assertion_pass_hook=true", "-rA")
    text = "\n".join(result.outlines)
    # -rA's lines: "PASSED test_cases.py::NAME", "FAILED test_cases.py::NAME - why" (a skip's names its line)
    found = {m.group(2): m.group(1) for m in re.finditer(r"^(PASSED|FAILED) test_cases.py::(\w+)", text, re.M)}
    return found, text


def test_a_test_that_asserts_nothing_fails_and_every_kind_of_check_counts(pytester, monkeypatch):
    found, text = outcomes(pytester, monkeypatch, ci=None)
    assert {
        name: found.get(name)
        for name in (
            "test_asserts",
            "test_asserts_through_a_helper",
            "test_asserts_only_in_its_fixture",
            "test_catches_what_it_expects",
            "test_catches_through_the_function_form",
            "test_nothing",
            "test_a_loop_over_nothing",
        )
    } == {
        "test_asserts": "PASSED",
        "test_asserts_through_a_helper": "PASSED",
        "test_asserts_only_in_its_fixture": "PASSED",
        "test_catches_what_it_expects": "PASSED",
        "test_catches_through_the_function_form": "PASSED",
        "test_nothing": "FAILED",
        "test_a_loop_over_nothing": "FAILED",
    }, text
    assert re.search(r"^FAILED test_cases.py::test_nothing - asserted nothing", text, re.M), text
    # outside CI every skip is a skip
    assert re.search(r"\b2 failed, 5 passed, 3 skipped\b", text), text


def test_in_ci_only_the_expected_skips_are_skips(pytester, monkeypatch):
    found, text = outcomes(pytester, monkeypatch, ci="true")
    assert found.get("test_skips_for_root") == "FAILED", text
    assert re.search(r"skipped in CI, and not an expected skip: 'needs root'", text), text
    assert re.search(r"\b3 failed, 5 passed, 2 skipped\b", text), text
    # each skip said, with why, at the end
    assert "census (CI): 2 expected skips, 1 unexpected" in text
    assert re.search(r"^  UNEXPECTED test_cases.py::test_skips_for_root: needs root$", text, re.M), text
    assert re.search(
        r"^  expected   test_cases.py::test_skips_for_a_gpu: no GPU here \(for the census test\)$", text, re.M
    ), text


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_ci_set_to_nothing_is_not_ci(pytester, monkeypatch, value):
    _, text = outcomes(pytester, monkeypatch, ci=value)
    assert re.search(r"\b2 failed, 5 passed, 3 skipped\b", text), text


def test_helpers_under_tests_are_rewritten_so_their_asserts_count():
    """The suite's own helper modules (not test files) are loaded through pytest's rewriting hook."""
    from _pytest.assertion.rewrite import AssertionRewritingHook

    import tests.analysis.reference_sched as helper

    assert isinstance(helper.__loader__, AssertionRewritingHook)


def test_in_ci_a_module_skipped_whole_is_judged_too(pytester, monkeypatch):
    """pytest.importorskip at a module's top skips it at collection: expected or not, as a test's skip is."""
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(REPO / "python")]))
    pytester.makepyfile(
        test_torch='import pytest\npytest.importorskip("no_module_here", reason="PyTorch is not installed here")\n'
        "def test_a():\n    assert True\n",
        test_other='import pytest\npytest.importorskip("no_module_here", reason="needs root")\n'
        "def test_b():\n    assert True\n",
    )
    result = pytester.runpytest_subprocess("-p", "tests.census", "-o", "enable_assertion_pass_hook=true")
    text = "\n".join(result.outlines)
    assert re.search(r"^ERROR test_other.py - skipped in CI, and not an expected skip: 'needs root'", text, re.M), text
    assert re.search(r"\b1 skipped, 1 error\b", text), text
