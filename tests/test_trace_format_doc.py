"""docs/trace-format.md's queries, run as printed on a real recording (format
2): DuckDB with extension installs and loads turned off (its Parquet reader
is built in), polars, pandas, and the Spark SQL statement in DuckDB over the
same view. Each answer equals launchgap's own reader's."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pytest

from launchgap.trace import Event, read_trace
from tests.conftest import CUDASIM, REPO
from tests.recorder.conftest import RECORDER, needs_bpf

pytestmark = needs_bpf

DOC = REPO / "docs" / "trace-format.md"


def queries() -> dict[str, str]:
    """Each `<!-- query: NAME -->` block of the documentation."""
    text = DOC.read_text()
    found = dict(re.findall(r"<!-- query: (\w+) -->\n```\w+\n(.*?)```", text, re.S))
    assert set(found) == {"duckdb", "polars", "pandas", "sql"}
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("doc") / "run.lg"
    proc = subprocess.run(
        [
            str(RECORDER),
            "-q",
            "-o",
            str(out),
            "--",
            str(CUDASIM),
            "decode",
            "--quiet",
            "--tokens",
            "30",
            "--threads",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def run_python(code: str, trace: Path):
    """Runs a documented snippet on TRACE; returns the value of its last expression."""
    tree = ast.parse(code.replace("run.lg", str(trace)))
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), "a snippet ends with the expression it shows"
    scope: dict = {}
    exec(compile(tree, "trace-format.md", "exec"), scope)
    return eval(compile(ast.Expression(last.value), "trace-format.md", "eval"), scope)


def test_duckdb_reads_the_launch_table_with_nothing_to_install(recording):
    trace = read_trace(recording)
    duckdb.sql("SET autoinstall_known_extensions = false; SET autoload_known_extensions = false")
    got = run_python(queries()["duckdb"], recording)
    expected = (
        trace.of(Event.LAUNCH)
        .group_by("tid")
        .agg(pl.len().alias("launches"), ((pl.col("ts_ns").max() - pl.col("ts_ns").min()) / 1e9).alias("s"))
    )
    assert sorted((tid, n) for tid, n, _ in got) == sorted(expected.select("tid", "launches").rows())
    assert sum(n for _, n, _ in got) == trace.count(Event.LAUNCH) == 2 * 30 * 478
    parquet = duckdb.sql(
        "SELECT installed, loaded, install_mode FROM duckdb_extensions() WHERE extension_name = 'parquet'"
    ).fetchall()[0]
    assert parquet[1] and parquet[2] == "STATICALLY_LINKED", parquet


def preemptions(trace) -> list[tuple[str, int]]:
    return (
        trace.of(Event.SWITCH, "voluntary", "next_comm")
        .filter(~pl.col("voluntary"))
        .group_by("next_comm")
        .len()
        .sort(["len", "next_comm"], descending=[True, False])
        .rows()
    )


def test_polars_reads_the_switch_table(recording):
    got = run_python(queries()["polars"], recording)
    assert got.rows() == preemptions(read_trace(recording))


def test_pandas_reads_the_sync_table(recording):
    got = run_python(queries()["pandas"], recording)
    assert isinstance(got, pd.DataFrame)
    syncs = read_trace(recording).of(Event.SYNC, "api", "duration_ns")
    expected = syncs.group_by("api").agg(pl.len().alias("count"), pl.col("duration_ns").sum().alias("sum"))
    assert sorted((api, int(r["count"]), int(r["sum"])) for api, r in got.iterrows()) == sorted(expected.rows())
    assert int(got["count"].sum()) == read_trace(recording).count(Event.SYNC) == 2 * 31


def test_the_spark_sql_statement_over_the_switch_view(recording):
    connection = duckdb.connect()
    connection.sql(f"CREATE VIEW switch AS SELECT * FROM read_parquet('{recording}/switch/*.parquet')")
    got = connection.sql(queries()["sql"]).fetchall()
    assert got == preemptions(read_trace(recording))
