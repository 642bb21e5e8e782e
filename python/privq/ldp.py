"""Device reports: local differential privacy from Python.

Devices privatize their own item before it leaves them (ε-LDP per report); the
host only decodes and aggregates the reports into unbiased frequency estimates
with confidence intervals. This module is ``privq ldp`` from Python, through the
same library entry points, so the estimates for the same reports are the ones
``privq ldp aggregate`` prints.

* :class:`Campaign`: the public configuration every accepted report must match
  (mechanism, ε, domain size, query ids), validated in Rust.
* :func:`simulate`: devices simulated on this machine, one per value, writing a
  report file (the bytes ``privq ldp simulate`` writes).
* :func:`aggregate`: report files (bytes or paths) or a collector's database
  (:class:`CollectorDatabase`) checked against a campaign and aggregated into a
  DataFrame of estimates.

>>> from privq import ldp
>>> campaign = ldp.Campaign("oue", epsilon=1, domain=4)
>>> reports = ldp.simulate([0, 1, 1, 3] * 500, campaign, seed=11)
>>> table = ldp.aggregate(reports, campaign)
>>> list(table.columns)
['group', 'item', 'estimate', 'std_error', 'ci_low', 'ci_high', 'post_processed', 'reports']
>>> len(table), int(table["reports"][0])
(4, 2000)
"""

from __future__ import annotations

import os
import warnings
from fractions import Fraction
from typing import Any, Iterable, List, Optional, Sequence, Union

from . import _privq
from ._privq import PrivqError

__all__ = [
    "Campaign",
    "CollectorDatabase",
    "ReportError",
    "ReportsRejectedWarning",
    "aggregate",
    "simulate",
]



class CollectorDatabase:
    """The SQLite database of a privq collector (``privq serve --db PATH``), as
    an input of :func:`aggregate`: the reports it accepted, read as ``privq ldp
    aggregate --db PATH`` reads them (one report per device and report kind,
    each checked against the campaign on its own; reports of other campaigns
    are counted as rejected). The file is only read (read-only, never
    migrated): a missing one raises :class:`FileNotFoundError`; a file that is
    not a collector's database (its schema not exactly the collector's) or a
    collector database of another schema version (run ``privq serve --db PATH``
    once to migrate an older one) :class:`ValueError` when :func:`aggregate`
    opens it, the file left unchanged. Ctrl-C interrupts a long read
    (:class:`KeyboardInterrupt`). The database is trusted input: its reports
    are not verified again against the device keys stored beside them. The same
    file given twice (any path to it) raises :class:`ValueError`; reports carry
    no identity, so a report both in the database and in a report file (or in a
    copy of the database) counts twice.

    >>> CollectorDatabase("fleet.db")
    CollectorDatabase('fleet.db')
    >>> aggregate(CollectorDatabase("/nonexistent/fleet.db"), Campaign("oue", epsilon=1, domain=4))
    Traceback (most recent call last):
    ...
    FileNotFoundError: /nonexistent/fleet.db: no such collector database
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                f"path must be a str or os.PathLike, not {type(path).__name__}"
            )
        self.path = os.fspath(path)

    def __repr__(self) -> str:
        return f"CollectorDatabase({self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CollectorDatabase) and self.path == other.path

    __hash__ = None  # type: ignore[assignment]


ReportInput = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", CollectorDatabase]


class ReportError(PrivqError, ValueError):
    """Report input that gives no estimates: nothing usable was read (empty,
    truncated, foreign or hostile bytes, another campaign's reports), or, with
    ``strict=True``, some frame was rejected or some byte skipped. The message
    is one sentence: what happened, the counts, the rejections by reason and
    the first problem with its byte offset. ``summary`` holds the summary
    ``privq ldp aggregate`` prints (every problem listed)."""

    summary: str = ""

    def __init__(self, message: str, summary: str = "") -> None:
        super().__init__(message)
        self.summary = summary


class ReportsRejectedWarning(UserWarning):
    """Some frames were rejected or bytes skipped (or some estimate is
    undefined); the estimates are from the accepted reports. The message says
    what was read in one sentence, as :class:`ReportError`'s does."""


class Campaign:
    """The public configuration of a collection of device reports.

    ``mechanism`` is one of ``rr`` (binary), ``grr``, ``sue``, ``oue``, ``olh``,
    ``hr`` (frequency randomizers over ``domain`` items), or ``1bitmean``
    (``bound``), ``sq-bit``, ``sq-laplace`` (``grid_exponent``) for means.
    ``epsilon`` is ε per report, exact as everywhere in privq (``0.5``, ``"1/2"``,
    a :class:`~fractions.Fraction`). ``queries`` lists the query ids collected
    (ids or ``"a-b"`` ranges; default ``[0]``). ``memory_mib`` caps the
    aggregation state. Everything is validated in Rust, as ``privq ldp
    aggregate`` validates a campaign: a bad one raises :class:`ValueError`
    naming the field.

    >>> Campaign("grr", epsilon="1/2", domain=8).epsilon
    Fraction(1, 2)
    >>> Campaign("oue", epsilon=0, domain=8)
    Traceback (most recent call last):
    ...
    ValueError: campaign epsilon: ...
    >>> Campaign("laplace", epsilon=1, domain=8)
    Traceback (most recent call last):
    ...
    ValueError: campaign mechanism: unknown mechanism "laplace" (one of rr, grr, ...)
    """

    def __init__(
        self,
        mechanism: str,
        epsilon: Union[int, float, str, Fraction],
        domain: Optional[int] = None,
        *,
        queries: Optional[Sequence[Union[int, str]]] = None,
        bound: Optional[int] = None,
        grid_exponent: Optional[int] = None,
        memory_mib: int = 256,
    ) -> None:
        from . import _number

        if not isinstance(mechanism, str):
            raise TypeError(f"mechanism must be a str, not {type(mechanism).__name__}")
        for name, value in (("domain", domain), ("bound", bound), ("grid_exponent", grid_exponent)):
            if value is not None and (isinstance(value, bool) or not isinstance(_number(value), int)):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        qs = None if queries is None else [str(q) for q in queries]
        self._inner = _privq.Campaign(
            mechanism,
            _number(epsilon),
            None if domain is None else int(domain),
            qs,
            None if bound is None else int(bound),
            None if grid_exponent is None else int(grid_exponent),
            int(memory_mib),
        )

    @classmethod
    def from_json(cls, text: str, *, memory_mib: int = 256) -> "Campaign":
        """A campaign from the JSON of a campaign file."""
        self = cls.__new__(cls)
        self._inner = _privq.Campaign.from_json(text, int(memory_mib))
        return self

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, memory_mib: int = 256) -> "Campaign":
        """A campaign from a campaign file (``privq ldp simulate --campaign``)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read(), memory_mib=memory_mib)

    def to_json(self) -> str:
        """The campaign in canonical form, as a campaign file's JSON (for
        ``privq ldp aggregate --campaign``)."""
        return self._inner.to_json()

    @property
    def mechanism(self) -> str:
        """The mechanism's name."""
        return self._inner.mechanism()

    @property
    def epsilon(self) -> Fraction:
        """ε per report, exactly."""
        num, den = self._inner.epsilon()
        return Fraction(num, den)

    @property
    def domain(self) -> Optional[int]:
        """The number of items (``None`` for a mean mechanism)."""
        return self._inner.domain()

    @property
    def report_len(self) -> int:
        """The length in bytes of every report of this campaign."""
        return self._inner.report_len()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Campaign) and self._inner == other._inner

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        d = "" if self.domain is None else f", domain={self.domain}"
        return f"Campaign({self.mechanism!r}, epsilon={self.epsilon}{d})"


def _values_bytes(values: Any) -> bytes:
    """The items as native-endian int64 bytes, through Arrow (a list, a NumPy
    array, a pandas or Polars Series, a pyarrow array)."""
    import pyarrow as pa

    if hasattr(values, "to_arrow") and not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_arrow()  # Polars
    try:
        arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    except OverflowError:
        raise ValueError("values hold an integer beyond 64 bits: items are 0 .. d-1") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise TypeError(f"values must be integers (items 0 .. d-1): {e}") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        raise ValueError("values hold missing values (null/None/NaN); every device holds one item")
    if len(arr) and not pa.types.is_integer(arr.type):
        raise TypeError(f"values must be integers (items 0 .. d-1), not {arr.type}")
    try:
        arr = arr.cast(pa.int64())
    except pa.ArrowInvalid:
        raise ValueError("values hold an integer beyond int64 (>= 2**63): items are 0 .. d-1") from None
    buf = arr.buffers()[1]
    if buf is None:
        return b""
    return buf.to_pybytes()[arr.offset * 8 : (arr.offset + len(arr)) * 8]


def simulate(values: Any, campaign: Campaign, *, seed: Optional[int] = None) -> bytes:
    """Simulated devices, one per value, each privatizing its item (an integer in
    ``0 .. d-1``) with the campaign's randomizer; returns the report file, the
    bytes ``privq ldp simulate`` writes (a file header and one frame per report).

    Each report is ε-LDP for its device's item: a simulation stands in for a
    fleet whose devices privatize on their own, and no central budget is
    charged. ``seed`` makes the reports **reproducible, for simulations, tests
    and demos only** (device ``i`` draws from ChaCha12 seeded with ``seed`` and
    ``i``, as ``privq ldp simulate --seed`` does, so the same values in the same
    order give the same bytes); by default the fleet's seed is drawn from the
    operating system's entropy. A value outside the domain raises
    :class:`ValueError`; mean mechanisms cannot be simulated.

    >>> campaign = Campaign("grr", epsilon=2, domain=3)
    >>> reports = simulate([0, 2, 2], campaign, seed=1)
    >>> reports == simulate([0, 2, 2], campaign, seed=1), len(reports) > 3 * campaign.report_len
    (True, True)
    >>> simulate([0, 3], campaign)
    Traceback (most recent call last):
    ...
    ValueError: values[1] = 3 is not an item of the campaign's domain (0 to 2)
    """
    if not isinstance(campaign, Campaign):
        raise TypeError(f"campaign must be a privq.ldp.Campaign, not {type(campaign).__name__}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise ValueError(f"seed = {seed!r}: an integer in [0, 2**64)")
    return _privq._ldp_simulate(_values_bytes(values), campaign._inner, seed)


def _inputs(
    reports: Union[ReportInput, Iterable[ReportInput]],
) -> "tuple[List[Any], List[str]]":
    """The report files (bytes or paths) and the collector databases."""
    if isinstance(reports, (bytes, bytearray, memoryview, str, os.PathLike, CollectorDatabase)):
        reports = [reports]
    elif not isinstance(reports, Iterable):
        raise TypeError(
            "reports: report-file bytes, a file path or a CollectorDatabase (or a list of "
            f"them), not {type(reports).__name__}"
        )
    out: List[Any] = []
    databases: List[str] = []
    for r in reports:
        if isinstance(r, (bytes, bytearray, memoryview)):
            out.append(bytes(r))
        elif isinstance(r, (str, os.PathLike)):
            out.append(os.fspath(r))
        elif isinstance(r, CollectorDatabase):
            databases.append(r.path)
        else:
            raise TypeError(
                "reports: report-file bytes, a file path or a CollectorDatabase, not "
                f"{type(r).__name__}"
            )
    if not out and not databases:
        raise ValueError(
            "reports: give at least one report file (bytes or a path) or a CollectorDatabase"
        )
    return out, databases


def aggregate(
    reports: Union[ReportInput, Iterable[ReportInput]],
    campaign: Campaign,
    *,
    confidence: float = 0.95,
    post: str = "none",
    strict: bool = False,
    output: str = "auto",
) -> Any:
    """Frequency (or mean) estimates from device reports, with confidence
    intervals: ``privq ldp aggregate``'s, for the same reports and campaign.

    ``reports``: the bytes of a report file, the path of one, a collector's
    database (:class:`CollectorDatabase`, read first, as ``privq ldp aggregate
    --db``), or a list of them (files read in order; concatenated files are read
    whole). Every report is checked against ``campaign``; a report that
    disagrees (another campaign's, say), damaged framing or hostile bytes are
    counted and skipped, never trusted.

    Returns one row per (query group, item): ``group``, ``item`` (null for a
    mean), ``estimate`` (unbiased), ``std_error``, ``ci_low``/``ci_high`` (the
    two-sided ``confidence`` interval), ``post_processed`` (``post``: ``none``,
    ``clip``, ``nonneg`` or ``simplex``) and ``reports`` (how many were
    aggregated in the group). As a pandas DataFrame when pandas is installed
    (``output="auto"``, the default), else a :class:`pyarrow.Table`;
    ``output="pandas"``, ``"polars"`` or ``"arrow"`` choose.

    When nothing usable was read, :class:`ReportError` is raised. When some
    frames were rejected or bytes skipped, the estimates from the accepted
    reports are returned with a :class:`ReportsRejectedWarning`, or, with
    ``strict=True``, :class:`ReportError` is raised and nothing is returned.

    >>> campaign = Campaign("grr", epsilon=2, domain=3)
    >>> reports = simulate([0, 1, 2, 2] * 200, campaign, seed=5)
    >>> est = aggregate(reports, campaign, post="simplex", output="arrow")
    >>> est.column("item").to_pylist(), est.num_rows
    ([0, 1, 2], 3)
    >>> aggregate(reports[:-3], campaign, strict=True)
    Traceback (most recent call last):
    ...
    privq.ldp.ReportError: ...truncated...
    """
    if not isinstance(campaign, Campaign):
        raise TypeError(f"campaign must be a privq.ldp.Campaign, not {type(campaign).__name__}")
    if output not in ("auto", "pandas", "polars", "arrow"):
        raise ValueError(f'output = {output!r}: "auto", "pandas", "polars" or "arrow"')
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise TypeError(f"confidence must be a float, not {type(confidence).__name__}")
    files, databases = _inputs(reports)
    rows, outcome, summary, message = _privq._ldp_aggregate(
        files, campaign._inner, float(confidence), str(post), databases
    )
    summary = summary.strip()
    if outcome == "nothing_usable":
        raise ReportError(message, summary)
    if outcome != "complete":
        if strict:
            raise ReportError(f"strict=True, so no estimates are returned: {message}", summary)
        warnings.warn(message, ReportsRejectedWarning, stacklevel=2)
    return _estimates_table(rows, output)


def _estimates_table(rows: List[dict], output: str) -> Any:
    import pyarrow as pa

    schema = pa.schema(
        [
            ("group", pa.string()),
            ("item", pa.int64()),
            ("estimate", pa.float64()),
            ("std_error", pa.float64()),
            ("ci_low", pa.float64()),
            ("ci_high", pa.float64()),
            ("post_processed", pa.float64()),
            ("reports", pa.int64()),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    if output == "arrow":
        return table
    if output == "polars":
        import polars as pl

        return pl.from_arrow(table)
    try:
        import pandas  # noqa: F401
    except ImportError:
        if output == "pandas":
            raise
        return table
    return table.to_pandas()
