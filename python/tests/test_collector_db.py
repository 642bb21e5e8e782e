"""privq.ldp.aggregate from a collector's database: the reports a real collector
(`privq serve bench`, the program's in-process collector over HTTP) stored,
aggregated from Python equal to `privq ldp aggregate --db` of the same database,
and bad databases refused with clear exceptions, untouched."""

from __future__ import annotations

import csv
import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import pytest

import privq
from privq import ldp

# `privq serve bench`'s reports: SQ-bit, ε = 1/64 each, one per query id 0..REPORTS-1.
REPORTS = 4
BENCH = ["--clients", "1", "--batches", "3", "--frames", "5", "--reports", str(REPORTS)]


@pytest.fixture(scope="module")
def fleet_db(privq_bin, tmp_path_factory):
    db = tmp_path_factory.mktemp("collector") / "fleet.db"
    out = subprocess.run(
        [str(privq_bin), "serve", "bench", "--db", str(db), *BENCH],
        capture_output=True,
        check=False,
    )
    assert "needs the cargo feature `serve`" not in out.stderr.decode(), (
        f"{privq_bin} has no collector: build it with `cargo build -p privq --features serve` "
        "(tools/test-all.sh's build has it)"
    )
    assert out.returncode == 0, out.stderr.decode()
    assert db.is_file()
    return db


def campaign(queries=f"0-{REPORTS - 1}"):
    return ldp.Campaign("sq-bit", epsilon="1/64", queries=[queries])


def cli_estimates(privq_bin, db, *extra):
    out = subprocess.run(
        [str(privq_bin), "ldp", "aggregate", "--db", str(db), "--mechanism", "sq-bit",
         "--epsilon", "1/64", "--queries", f"0-{REPORTS - 1}", "--format", "csv", *extra],
        capture_output=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    return list(csv.DictReader(io.StringIO(out.stdout.decode()))), out.stderr.decode()


def test_the_same_estimates_as_the_program(privq_bin, fleet_db):
    before = fleet_db.read_bytes()
    expected, _ = cli_estimates(privq_bin, fleet_db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every stored report is the campaign's: no warning
        got = ldp.aggregate(ldp.CollectorDatabase(fleet_db), campaign(), output="arrow").to_pylist()
    assert len(got) == len(expected) == REPORTS  # one mean per query group
    for g, e in zip(got, expected):
        assert g["group"] == e["group"] and g["item"] is None
        for k in ["estimate", "std_error", "ci_low", "ci_high"]:
            assert g[k] == float(e[k]), (k, g, e)  # bit for bit
        assert g["reports"] == 3 * 5  # one report per device (frame) and query
    # Per campaign: one query group only; the other queries' reports are counted
    # as rejected and said, as the program says them.
    with pytest.warns(ldp.ReportsRejectedWarning, match="45 query_not_in_campaign"):
        one = ldp.aggregate(ldp.CollectorDatabase(str(fleet_db)), campaign("2"), output="arrow")
    assert one.num_rows == 1 and one.column("estimate")[0].as_py() == got[2]["estimate"]
    assert fleet_db.read_bytes() == before, "reading the database changed it"


def test_with_report_files_and_pandas(fleet_db, tmp_path):
    # Databases and report files together; nothing is deduplicated across them.
    both = ldp.aggregate([ldp.CollectorDatabase(fleet_db)], campaign())
    assert list(both["reports"]) == [15] * REPORTS
    assert type(both).__module__.startswith("pandas")


def test_another_campaign_is_a_report_error(fleet_db):
    with pytest.raises(ldp.ReportError, match="no usable report") as info:
        ldp.aggregate(ldp.CollectorDatabase(fleet_db), ldp.Campaign("oue", epsilon=1, domain=4))
    message = str(info.value)
    assert "\n" not in message and not message.startswith("privq:"), message
    assert "0 of 60 report(s) aggregated" in message and "rejected" in message, message
    assert "privq:" in info.value.summary  # the program's summary, kept beside it
    # Reports of the right kind but other query ids: warned and counted, the rest used.
    with pytest.warns(ldp.ReportsRejectedWarning, match="15 of 60 report"):
        ldp.aggregate(ldp.CollectorDatabase(fleet_db), campaign("1"), strict=False)
    with pytest.raises(ldp.ReportError, match="strict=True"):
        ldp.aggregate(ldp.CollectorDatabase(fleet_db), campaign("1"), strict=True)


def test_bad_databases(tmp_path):
    c = campaign()
    with pytest.raises(FileNotFoundError, match="no such collector database"):
        ldp.aggregate(ldp.CollectorDatabase(tmp_path / "missing.db"), c)
    assert not (tmp_path / "missing.db").exists(), "a missing database was created"
    with pytest.raises(FileNotFoundError):
        ldp.aggregate(ldp.CollectorDatabase(tmp_path), c)  # a directory
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ValueError, match="not a privq collector database.*not an SQLite"):
        ldp.aggregate(ldp.CollectorDatabase(junk), c)
    # Another application's SQLite database: refused, and left as it was.
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (body TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    with pytest.raises(ValueError, match="not a privq collector database.*schema"):
        ldp.aggregate(ldp.CollectorDatabase(other), c)
    assert other.read_bytes() == before
    con = sqlite3.connect(other)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["notes"]
    con.close()
    with pytest.raises(TypeError, match="CollectorDatabase"):
        ldp.aggregate([ldp.CollectorDatabase(junk), 3], c)
    with pytest.raises(TypeError, match="str or os.PathLike"):
        ldp.CollectorDatabase(3)
    with pytest.raises(ValueError, match="at least one"):
        ldp.aggregate([], c)


def test_the_program_refuses_a_foreign_database_too(privq_bin, tmp_path):
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (body TEXT)")
    con.commit()
    con.close()
    before = other.read_bytes()
    out = subprocess.run(
        [str(privq_bin), "ldp", "aggregate", "--db", str(other), "--mechanism", "sq-bit",
         "--epsilon", "1/64"],
        capture_output=True,
        check=False,
    )
    assert out.returncode != 0
    assert "not a privq collector database" in out.stderr.decode()
    assert other.read_bytes() == before


def test_is_an_error_of_the_package():
    assert issubclass(ldp.ReportError, privq.PrivqError)


def _sqlite(path, sql):
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()


def _files(path):
    """The bytes of a database and of its side files (a reader changes none)."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.glob(path.name + "*"))}


def test_foreign_and_forged_databases_are_refused_untouched(tmp_path):
    c = campaign()
    cases = {
        # A `reports` table and schema version 1 or 7: once migrated by the reader.
        "v1": "CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER, epoch INTEGER, "
        "sequence INTEGER, position INTEGER, report BLOB); CREATE TABLE frames (device "
        "INTEGER, epoch INTEGER, sequence INTEGER, tag BLOB, reports INTEGER, received "
        "INTEGER); CREATE TABLE devices (device INTEGER PRIMARY KEY); PRAGMA user_version = 1;",
        "v7": "CREATE TABLE reports (x TEXT); PRAGMA user_version = 7;",
        # A generated 200 MB report: the reader allocated until the process aborted.
        "huge": "CREATE TABLE devices (device INTEGER PRIMARY KEY, key BLOB NOT NULL, cap TEXT "
        "NOT NULL, spent TEXT, generation INTEGER NOT NULL DEFAULT 0); CREATE TABLE frames "
        "(device INTEGER NOT NULL, generation INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT "
        "NULL, sequence INTEGER NOT NULL, tag BLOB NOT NULL, reports INTEGER NOT NULL, received "
        "INTEGER NOT NULL, body BLOB, PRIMARY KEY (device, generation, epoch, sequence)); "
        "CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER, generation INTEGER, "
        "epoch INTEGER, sequence INTEGER, position INTEGER, report BLOB GENERATED ALWAYS AS "
        "(zeroblob(200000000)) VIRTUAL); CREATE TABLE reported (device INTEGER NOT NULL, kind "
        "TEXT NOT NULL, PRIMARY KEY (device, kind)); INSERT INTO reports (device) VALUES (1); "
        "PRAGMA user_version = 3;",
        # A virtual id computed at every row: the read hung.
        "slow": "CREATE TABLE devices (device INTEGER PRIMARY KEY); CREATE TABLE frames (x); "
        "CREATE TABLE reports (rid INTEGER PRIMARY KEY, device INTEGER, generation INTEGER, "
        "epoch INTEGER, sequence INTEGER, position INTEGER, report BLOB, id INTEGER GENERATED "
        "ALWAYS AS (length(hex(zeroblob(20000000 + rid))) + rid) VIRTUAL); "
        "PRAGMA user_version = 3;",
    }
    for name, sql in cases.items():
        db = tmp_path / f"{name}.db"
        _sqlite(db, sql)
        before = _files(db)
        with pytest.raises(ValueError, match="not a privq collector database") as info:
            ldp.aggregate(ldp.CollectorDatabase(db), c)
        assert _files(db) == before, f"{name}: {info.value}"


def test_an_older_database_is_refused_not_migrated(privq_bin, fleet_db, tmp_path):
    # A version-2 collector database: the version-3 one without frame bodies.
    old = tmp_path / "old.db"
    old.write_bytes(fleet_db.read_bytes())
    _sqlite(old, "PRAGMA journal_mode = DELETE; ALTER TABLE frames DROP COLUMN body; "
            "PRAGMA user_version = 2;")
    before = _files(old)
    with pytest.raises(ValueError, match=r"schema version 2.*privq serve --db"):
        ldp.aggregate(ldp.CollectorDatabase(old), campaign())
    assert _files(old) == before
    out = subprocess.run(
        [str(privq_bin), "ldp", "aggregate", "--db", str(old), "--mechanism", "sq-bit",
         "--epsilon", "1/64"],
        capture_output=True,
        check=False,
    )
    assert out.returncode != 0 and "privq serve --db" in out.stderr.decode()
    assert _files(old) == before


def test_the_same_database_twice_is_refused(fleet_db, tmp_path):
    link = tmp_path / "link.db"
    os.link(fleet_db, link)
    for twice in [[fleet_db, fleet_db], [fleet_db, str(fleet_db)], [fleet_db, link],
                  [fleet_db, fleet_db.parent / ".." / fleet_db.parent.name / fleet_db.name]]:
        with pytest.raises(ValueError, match="same collector database.*count twice"):
            ldp.aggregate([ldp.CollectorDatabase(p) for p in twice], campaign())


def test_ctrl_c_interrupts_a_slow_read(fleet_db, tmp_path):
    # A database of the collector's schema with many legacy report rows: a long read.
    big = tmp_path / "big.db"
    big.write_bytes(fleet_db.read_bytes())
    con = sqlite3.connect(big)
    # About 4 s to read in a debug build, 1 s in a release one.
    n, per = 2_000_000, 50_000
    con.executemany(
        "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received) "
        "VALUES (999, 0, 0, ?, zeroblob(32), ?, 0)",
        ((q, per) for q in range(n // per)),
    )
    con.execute(
        "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
        "INSERT INTO reports (device, generation, epoch, sequence, position, report) "
        "SELECT 999, 0, 0, i / ?, i % ?, x'01080000010040000000000000' FROM c",
        (n - 1, per, per),
    )
    con.commit()
    con.close()
    script = (
        "import sys, warnings\n"
        "from privq import ldp\n"
        "c = ldp.Campaign('sq-bit', epsilon='1/64', queries=['0-3'])\n"
        "print('reading', flush=True)\n"
        "warnings.simplefilter('ignore')\n"
        "try:\n"
        "    ldp.aggregate(ldp.CollectorDatabase(sys.argv[1]), c)\n"
        "    print('read', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(big)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"reading\n"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    if out == b"read\n":
        # Only a machine that reads 2 million rows in 0.3 s gets here; under CI the
        # test must test, not skip.
        message = "the read ended before the signal: the database is too small to interrupt"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert out == b"interrupted\n", (out, err)
    # Before, the signal waited for the end of the read.
    assert took < 1, f"KeyboardInterrupt {took:.1f} s after Ctrl-C"
