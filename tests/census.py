"""The suite's own checks on its tests, as a pytest plugin (loaded by tests/conftest.py):

1. A test that asserts nothing fails. Every `assert` that passes in a test, in its fixtures or in a helper
   under tests/ (their modules are assertion-rewritten too) is counted, through pytest's
   pytest_assertion_pass hook (pyproject.toml sets enable_assertion_pass_hook); so is every pytest.raises
   whose exception came. A test whose call passed with none of either ran failed to check anything: a loop
   over nothing, a helper that returned early, a body with no check. It fails, saying so.

2. In CI, a skip that is not expected fails. CI is when the environment variable CI is set to anything but
   "", "0" or "false" (.ci/run sets it; GitHub Actions and most others do). A skip then prints why (pytest's
   -ra summary, and the census's own lines at the end), and fails unless its reason begins with one of
   EXPECTED_SKIPS_IN_CI: the few things a CI host may lack for good (PyTorch, a GPU). Everything else a test
   needs (root, BPF, the recorder, trace-cmd, Linux 5.10's BTF, a free CPU) CI must have: a skip for it there
   would hide a test that never ran.
"""

from __future__ import annotations

import marshal
import os
import sys
import types
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# (what a skip's reason begins with, why a CI host may lack it)
EXPECTED_SKIPS_IN_CI = (
    (
        "PyTorch is not installed here",
        "PyTorch is not a launchgap dependency; scripts/gpu-validate's part a and the decode script need it",
    ),
    ("no GPU", "the GPU checks (scripts/gpu-validate on a real device) need one; CI hosts have none"),
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def expected_skip(reason: str) -> bool:
    return any(reason.startswith(prefix) for prefix, _ in EXPECTED_SKIPS_IN_CI)


# ---- the assertions that ran, per test -----------------------------------------------------------------

_checks: dict[str, int] = {}
_current: list[str] = []  # the nodeid of the test running now (empty between tests)


def _count() -> None:
    if _current:
        _checks[_current[0]] = _checks.get(_current[0], 0) + 1


class _CountedRaises:
    """pytest.raises as a context manager, counting the check when the expected exception came."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __enter__(self):
        return self._inner.__enter__()

    def __exit__(self, *exc):
        suppressed = self._inner.__exit__(*exc)
        if suppressed:
            _count()
        return suppressed

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _counting(raises):
    def counted(*args, **kwargs):
        result = raises(*args, **kwargs)
        if len(args) > 1 or kwargs.get("func") is not None:  # the function form: it raised, or raises failed
            _count()
            return result
        return _CountedRaises(result)

    counted.__wrapped__ = raises
    counted.__doc__ = raises.__doc__
    counted._census = True
    return counted


def pytest_assertion_pass(item, lineno, orig, expl) -> None:
    _count()


def _rewritten_without_the_pass_hook(code: types.CodeType) -> bool:
    """Whether CODE (a module's) holds asserts rewritten while enable_assertion_pass_hook was off."""
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return "_format_explanation" in names and "_check_if_assertion_pass_impl" not in names


def _remove_stale_rewrites() -> list[Path]:
    """pytest caches each rewritten module as a .pyc keyed by the source's mtime, not by the hook setting: one
    rewritten before the hook was enabled would count none of its asserts. Such caches under tests/ are removed
    (pytest rewrites the module again on import); returns the sources whose cache was stale."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, get_cache_dir
    except ImportError:  # another pytest's layout: nothing to clean
        return []
    stale = []
    for source in TESTS.rglob("*.py"):
        pyc = get_cache_dir(source) / (source.stem + PYC_TAIL)
        try:
            code = marshal.loads(pyc.read_bytes()[16:])
        except (OSError, ValueError, EOFError, TypeError):
            continue
        if isinstance(code, types.CodeType) and _rewritten_without_the_pass_hook(code):
            pyc.unlink(missing_ok=True)
            stale.append(source)
    return stale


# Done as tests/conftest.py loads this plugin, before any other module under tests/ is imported: stale caches
# removed, and every package under tests/ marked for rewriting, so that the asserts of helpers (builders,
# references, checks shared by several files) count for the test that called them.
_stale = _remove_stale_rewrites()
pytest.register_assert_rewrite(
    *[name for name in sorted(f"tests.{p.parent.name}" for p in TESTS.glob("*/__init__.py")) if name not in sys.modules]
)
if not getattr(pytest.raises, "_census", False):
    pytest.raises = _counting(pytest.raises)
_skips_in_ci: list[tuple[str, str, bool]] = []  # nodeid, reason, expected
_CENSUS_ON = pytest.StashKey[bool]()


def pytest_configure(config) -> None:
    if not config.getini("enable_assertion_pass_hook"):
        raise pytest.UsageError(
            "tests/census.py counts assertions through pytest_assertion_pass: set "
            "enable_assertion_pass_hook = true in [tool.pytest.ini_options]"
        )
    # tests/conftest.py, imported before its stale cache was removed, counts none of its asserts this run
    config.stash[_CENSUS_ON] = TESTS / "conftest.py" not in _stale


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _current.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "teardown":
        return report
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        expected = expected_skip(reason)
        _skips_in_ci.append((item.nodeid, reason, expected))
        if not expected:
            report.outcome = "failed"
            report.longrepr = (
                f"skipped in CI, and not an expected skip: {reason!r}. CI must run it (expected "
                f"skips, tests/census.py EXPECTED_SKIPS_IN_CI: "
                f"{', '.join(repr(p) for p, _ in EXPECTED_SKIPS_IN_CI)})"
            )
        return report
    if (
        report.when == "call"
        and report.passed
        and not hasattr(report, "wasxfail")
        and item.config.stash.get(_CENSUS_ON, True)
        and not _checks.get(item.nodeid)
    ):
        report.outcome = "failed"
        report.longrepr = (
            "asserted nothing: no assert passed and no pytest.raises caught its exception in this "
            "test, its fixtures or its helpers under tests/ (a loop over nothing? a check that "
            "returned early?). A test checks something against a truth (tests/census.py)"
        )
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report) -> None:
    """A whole module skipped (pytest.importorskip at its top) is a skip too."""
    if report.skipped and in_ci():
        reason = _skip_reason(report)
        expected = expected_skip(reason)
        _skips_in_ci.append((report.nodeid, reason, expected))
        if not expected:
            report.outcome = "failed"
            report.longrepr = f"skipped in CI, and not an expected skip: {reason!r} (tests/census.py)"


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    write = terminalreporter.write_line
    if _stale:
        write(
            f"census: removed {len(_stale)} assertion-rewrite caches made without the pass hook "
            f"({', '.join(str(s.relative_to(TESTS.parent)) for s in _stale[:3])}{', ...' if len(_stale) > 3 else ''})"
        )
    if not config.stash.get(_CENSUS_ON, True):
        write(
            "census: tests/conftest.py's cache was stale this run: tests asserting nothing were not failed; "
            "the next run counts"
        )
    if in_ci():
        unexpected = [s for s in _skips_in_ci if not s[2]]
        write(f"census (CI): {len(_skips_in_ci) - len(unexpected)} expected skips, {len(unexpected)} unexpected")
        for nodeid, reason, expected in _skips_in_ci:
            write(f"  {'expected  ' if expected else 'UNEXPECTED'} {nodeid}: {reason}")
