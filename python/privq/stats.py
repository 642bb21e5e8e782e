"""One private statistic at a time: :func:`count`, :func:`sum`, :func:`mean`,
:func:`variance`, :func:`quantile` and :func:`histogram`, optionally by group.

Each is a one-aggregate query of :func:`privq.sql`, written for you: the same
library plan, the same contribution bounding per privacy unit, the same exact
noise, intervals, checks and charges, and the same output table (the group-by
columns, then the value and, except for a quantile, ``VALUE_lo`` and
``VALUE_hi``). Every keyword argument of :func:`privq.sql` (``privacy_unit``,
``max_groups``, ``max_rows``, ``keys``, ``delta``, ``neighbours``,
``confidence``, ``quantile_candidates``, ``drop_invalid``, ``accountant``,
``seed``) is accepted and means what it means there.

>>> import pandas as pd, privq
>>> df = pd.DataFrame({"device": [i % 50 for i in range(200)],
...                    "region": ["north", "south"] * 100, "temp": [12.5, 20.0] * 100})
>>> out = privq.mean(df, "temp", bounds=(-20, 50), by="region", privacy_unit="device",
...                  keys={"region": ["north", "south"]}, epsilon=1, seed=3)
>>> list(out.columns)
['region', 'mean', 'mean_lo', 'mean_hi']
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional, Sequence, Union

__all__ = ["count", "sum", "mean", "variance", "quantile", "histogram"]

Number = Union[int, float]
By = Union[None, str, Sequence[str]]

# The table's name in the written query; never shown to the user.
_TABLE = "t"


def _ident(name: Any) -> str:
    """A column name as a quoted SQL identifier (embedded quotes doubled)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"a column name must be a non-empty str, not {name!r}")
    return '"' + name.replace('"', '""') + '"'


def _groups(by: By) -> list:
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    by = list(by)
    if not by:
        raise ValueError("by = []: give a column name, a list of them, or None")
    return by


def _literal(x: Any) -> str:
    """A finite number as a plain SQL literal (no exponent), exactly as Python
    prints it."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{x!r} is not a number")
    if isinstance(x, int):
        return str(x)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"{x!r} is not a finite number")
    return format(Decimal(repr(x)), "f")


def _bounds(column: str, bounds: Any) -> dict:
    if bounds is None:
        raise ValueError(
            f"bounds=(lo, hi) is required for {column!r}: public limits, chosen "
            "without looking at the data (values outside are clamped into them)"
        )
    return {column: bounds}


def _run(df: Any, select: str, by: list, options: dict, bounds: Optional[dict]) -> Any:
    from . import sql

    if "bounds" in options:
        raise TypeError("give bounds= as this function's own argument")
    keys = [_ident(b) for b in by]
    query = f"SELECT {', '.join(keys + [select])} FROM {_TABLE}"
    if keys:
        query += f" GROUP BY {', '.join(keys)}"
    return sql(query, {_TABLE: df}, bounds=bounds, **options)


def count(df: Any, *, by: By = None, epsilon: Number, **options: Any) -> Any:
    """The private number of rows (kept by contribution bounding), by group.

    Output column ``count`` (an integer) with ``count_lo``/``count_hi``. With a
    ``privacy_unit`` and the default limits (one group, one row per unit) it
    counts units.

    >>> import pandas as pd, privq
    >>> df = pd.DataFrame({"person": range(500), "city": ["Oslo"] * 300 + ["Rome"] * 200})
    >>> privq.count(df, by="city", keys={"city": ["Oslo", "Rome"]}, privacy_unit="person",
    ...             epsilon=1, seed=1)["count"].tolist()
    [296, 199]
    """
    return _run(df, "COUNT(*) AS \"count\"", _groups(by), dict(epsilon=epsilon, **options), None)


def sum(  # noqa: A001  (privq.sum, like numpy.sum)
    df: Any, column: str, *, bounds: Sequence[Number], by: By = None, epsilon: Number,
    **options: Any,
) -> Any:
    """The private sum of ``column`` clamped into ``bounds = (lo, hi)``, by group.
    Output column ``sum`` with ``sum_lo``/``sum_hi``."""
    select = f"SUM({_ident(column)}) AS \"sum\""
    return _run(df, select, _groups(by), dict(epsilon=epsilon, **options), _bounds(column, bounds))


def mean(
    df: Any, column: str, *, bounds: Sequence[Number], by: By = None, epsilon: Number,
    **options: Any,
) -> Any:
    """The private mean of ``column`` clamped into ``bounds``, by group: a noisy
    centred sum over a noisy count (two measurements, ε/2 each). Output column
    ``mean`` with ``mean_lo``/``mean_hi``."""
    select = f"AVG({_ident(column)}) AS \"mean\""
    return _run(df, select, _groups(by), dict(epsilon=epsilon, **options), _bounds(column, bounds))


def variance(
    df: Any, column: str, *, bounds: Sequence[Number], by: By = None, epsilon: Number,
    **options: Any,
) -> Any:
    """The private population variance of ``column`` clamped into ``bounds``, by
    group (three measurements, ε/3 each). Output column ``variance`` with
    ``variance_lo``/``variance_hi``."""
    select = f"VARIANCE({_ident(column)}) AS \"variance\""
    return _run(df, select, _groups(by), dict(epsilon=epsilon, **options), _bounds(column, bounds))


def quantile(
    df: Any, column: str, q: Number, *, bounds: Sequence[Number], by: By = None,
    epsilon: Number, **options: Any,
) -> Any:
    """The private ``q``-quantile of ``column`` clamped into ``bounds``, by group
    (report noisy max over ``quantile_candidates`` points spread over the bounds;
    ``q`` in [0, 1] with at most four decimals). Output column ``quantile``, with
    no interval (see the private-statistics chapter for what the noise guarantees
    about a quantile's rank)."""
    select = f"QUANTILE({_ident(column)}, {_literal(q)}) AS \"quantile\""
    return _run(df, select, _groups(by), dict(epsilon=epsilon, **options), _bounds(column, bounds))


def histogram(
    df: Any, column: str, edges: Sequence[Number], *, by: By = None, epsilon: Number,
    **options: Any,
) -> Any:
    """Private counts of ``column`` in the bins ``[e0, e1), …, [e(k-1), ek]`` over
    public ``edges`` (values outside are counted in the end bins), by group.
    Output columns ``bin`` (the interval's label) and ``count`` with
    ``count_lo``/``count_hi``; every bin is released, empty ones with a noisy
    zero.

    >>> import pandas as pd, privq
    >>> df = pd.DataFrame({"person": range(200), "age": [5, 25, 25, 70] * 50})
    >>> privq.histogram(df, "age", [0, 18, 65, 120], privacy_unit="person",
    ...                 epsilon=1, seed=2)["bin"].tolist()
    ['[0, 18)', '[18, 65)', '[65, 120]']
    """
    edges = list(edges)
    if len(edges) < 2:
        raise ValueError(f"edges = {edges!r}: at least two numbers")
    bins = f"BIN({', '.join([_ident(column)] + [_literal(e) for e in edges])}) AS \"bin\""
    by = _groups(by)
    keys = [_ident(b) for b in by]
    counted = 'COUNT(*) AS "count"'
    query = f"SELECT {', '.join(keys + [bins, counted])} FROM {_TABLE}"
    query += f" GROUP BY {', '.join(keys + [_ident('bin')])}"
    from . import sql

    return sql(query, {_TABLE: df}, epsilon=epsilon, **options)
