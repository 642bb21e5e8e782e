"""privq from Python: exact differential privacy for DataFrames.

A thin layer over privq's Rust library (the same entry points as the ``privq``
program): DataFrames go in and out through Arrow (pandas, Polars, PyArrow, or any
object with ``__arrow_c_stream__``), every privacy decision is made in Rust, and
no Python code draws noise.

>>> import pandas as pd
>>> import privq
>>> df = pd.DataFrame({"smoker": [0, 1, 1, 0] * 50, "cough": [0, 1, 0, 0] * 50})
>>> domain = privq.Domain({"smoker": 2, "cough": 2})
>>> budget = privq.Accountant(epsilon=2, delta=1e-6)
>>> synthetic = privq.synthesize(df, domain, epsilon=1, delta=1e-9,
...                              accountant=budget, seed=7)
>>> list(synthetic.columns), str(synthetic["smoker"].dtype)
(['smoker', 'cough'], 'int64')
>>> budget.spent.epsilon
Fraction(1, 1)
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
import weakref
from fractions import Fraction
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import _privq
from ._privq import BudgetExceeded, PrivqError

# Tracebacks name the exceptions where users import them from.
BudgetExceeded.__module__ = __name__
PrivqError.__module__ = __name__

try:
    from importlib.metadata import PackageNotFoundError as _NotFound
    from importlib.metadata import version as _version

    __version__: str = _version("privq")
except _NotFound:  # pragma: no cover - not installed (a source checkout)
    __version__ = "0+unknown"

__all__ = [
    "Accountant",
    "Budget",
    "BudgetExceeded",
    "Domain",
    "PrivqError",
    "SeedWarning",
    "AccuracyWarning",
    "Synthesis",
    "SynthesisPlan",
    "Synthesizer",
    "discover_domain",
    "ldp",
    "plan_synthesis",
    "sql",
    "synthesize",
]

Number = Union[int, float, str, Fraction]


class SeedWarning(UserWarning):
    """A fixed ``seed`` makes the noise reproducible, so anyone who knows it can
    remove the noise: use seeds for tests and demos only."""


class AccuracyWarning(UserWarning):
    """A released estimate is too noisy to say much in some groups (for
    :func:`sql`, a quantile whose rank bound is over half a group's noisy count:
    that group's value may lie anywhere between the bounds)."""


class Budget(NamedTuple):
    """An amount of privacy budget.

    ``epsilon`` is exact (a :class:`~fractions.Fraction`) for a basic accountant;
    for a zCDP accountant ``rho`` is the exact quantity and ``epsilon`` its (ε, δ)
    conversion at the accountant's δ (a float, rounded up), or ``None`` where there
    is none. ``delta`` is a float.
    """

    epsilon: Optional[Union[Fraction, float]]
    delta: float
    rho: Optional[Fraction]


def _number(value: Any) -> Any:
    """A NumPy scalar as the plain Python number it holds (``np.float64(0.1)`` as
    the float ``0.1``, read by its shortest decimal; ``np.int64(3)`` as ``3``);
    anything else, including NumPy's bool, unchanged (and refused in Rust)."""
    if type(value).__module__ == "numpy":
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
    return value


def _delta(value: Any) -> float:
    """δ as a float: a Python or NumPy int or float, never a bool."""
    value = _number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"delta must be a float, not {type(value).__name__}")
    return float(value)


# Every Accountant of this process, so that a forked child can close its copies of
# the in-memory ones: each copy could otherwise spend the whole budget again. A
# budget file's accountant keeps working (the file is charged under its lock).
_accountants: "weakref.WeakSet[Accountant]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for accountant in list(_accountants):
        inner = getattr(accountant, "_inner", None)
        if inner is not None:
            inner._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _fraction(pair: Optional[Sequence[int]]) -> Optional[Fraction]:
    return None if pair is None else Fraction(pair[0], pair[1])


class Accountant:
    """A privacy budget shared by several releases.

    ``Accountant(epsilon=..., delta=0)`` is an (ε, δ) budget under basic
    composition (pure ε-DP when ``delta`` is 0); ``Accountant.zcdp(rho=...,
    delta=...)`` a ρ-zCDP budget. ε and ρ are exact: a float is read as its
    shortest decimal (``0.1`` is exactly 1/10), a string may be a decimal or a
    fraction (``"1/3"``), and a :class:`~fractions.Fraction` is taken as it is.
    NumPy numbers are read as the Python numbers they hold (``np.float64(0.1)`` is
    1/10). NaN, infinite, negative or zero budgets are refused with
    :class:`ValueError`.

    Each release passed this accountant is charged its whole budget **before** it
    runs; a charge past the budget raises :class:`BudgetExceeded` and releases
    nothing.

    With ``budget_file=PATH`` the budget is kept in the library's budget file
    (``privq budget show PATH`` prints it): every charge is written to it under a
    lock before anything is released, so the budget holds across processes and
    restarts. The file is created when the accountant is made, with the cap
    given, so a second process (or a restart) opens it without repeating the
    cap: omit ``epsilon`` (and ``delta``) there. A cap other than the file's, or
    a ``delta`` other than its δ, is refused with :class:`ValueError`; so is a
    missing file without ``epsilon`` (and nothing is created then). The path is
    made absolute when the accountant is made: a later :func:`os.chdir` does not
    change the file it charges. A budget file that goes missing is refused at the
    next charge (:class:`PrivqError`), never started afresh, and one with a
    second name (a hard link) is refused: each name would be a budget of its own.

    An in-memory accountant (no ``budget_file``) lives in one process: in a child
    made by ``os.fork`` (or ``multiprocessing`` with the fork start method) it
    refuses every charge with :class:`PrivqError`, since each copy could
    otherwise spend the whole budget. Use ``budget_file=`` to share a budget
    across processes.

    >>> acct = Accountant(epsilon="3/2", delta=1e-6)
    >>> acct.remaining.epsilon
    Fraction(3, 2)
    >>> Accountant(epsilon=0.1).budget.epsilon
    Fraction(1, 10)
    >>> Accountant(epsilon=-1)
    Traceback (most recent call last):
    ...
    ValueError: epsilon = -1: epsilon must be positive, got a negative value

    A budget file holds its cap from the start:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.json")
    >>> first = Accountant(epsilon=2, budget_file=path)
    >>> os.path.exists(path), Accountant(budget_file=path).budget.epsilon
    (True, Fraction(2, 1))
    >>> Accountant(epsilon=3, budget_file=path)
    Traceback (most recent call last):
    ...
    ValueError: budget file ... has the cap ..., not ...: a cap is fixed when its file is created (omit epsilon to use it)
    """

    def __init__(
        self,
        epsilon: Optional[Number] = None,
        delta: Optional[float] = None,
        *,
        budget_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        path = None if budget_file is None else os.fspath(budget_file)
        d = None if delta is None else float(delta)
        self._inner = _privq.Accountant(_number(epsilon), d, path)
        _accountants.add(self)

    @classmethod
    def zcdp(cls, rho: Number, delta: float) -> "Accountant":
        """A ρ-zCDP budget (Bun–Steinke 2016), reported as (ε, δ) at ``delta``.

        >>> Accountant.zcdp(rho="1/2", delta=1e-6).budget.rho
        Fraction(1, 2)
        """
        self = cls.__new__(cls)
        self._inner = _privq.Accountant.zcdp(_number(rho), float(delta))
        _accountants.add(self)
        return self

    @property
    def budget(self) -> Budget:
        """The whole budget."""
        b = self._inner.budget()
        return Budget(_fraction(b["epsilon"]), b["delta"], _fraction(b["rho"]))

    @property
    def spent(self) -> Budget:
        """What has been charged so far (ε exact for a basic accountant: ``0``
        before the first charge; ρ exact for a zCDP one)."""
        s = self._inner.spent()
        if s["rho"] is not None or self._inner.budget()["kind"] == "zcdp":
            rho = _fraction(s["rho"]) or Fraction(0)
            return Budget(s["epsilon_f64"], s["delta"], rho)
        return Budget(_fraction(s["epsilon"]) or Fraction(0), s["delta"], None)

    @property
    def remaining(self) -> Budget:
        """What is left (ε exact for a basic accountant, ρ exact for a zCDP one;
        ``0`` when used up exactly)."""
        r = self._inner.remaining()
        if self._inner.budget()["kind"] == "zcdp":
            return Budget(None, r["delta"], _fraction(r["rho"]) or Fraction(0))
        return Budget(_fraction(r["epsilon"]) or Fraction(0), r["delta"], None)

    def ledger(self) -> "Any":
        """Every accepted charge, in order, as a :class:`pyarrow.Table` with the
        columns ``label``, ``cost`` (exact), ``epsilon`` and ``rho`` (exact
        fractions as text), ``delta``, ``neighbours``, ``privacy_unit`` (the
        unit column the charge protects, null for one record) and ``time`` (when
        the charge was accepted, UTC). ``.to_pandas()`` or ``polars.from_arrow`` turn it into a DataFrame.
        """
        return _ledger_table(self._inner.ledger())

    def __repr__(self) -> str:
        b = self.budget
        if b.rho is not None:
            return f"Accountant.zcdp(rho={b.rho}, delta={b.delta!r}); spent {self.spent.rho}"
        where = self._inner.budget()["budget_file"]
        file = "" if where is None else f", budget_file={os.fspath(where)!r}"
        return f"Accountant(epsilon={b.epsilon}, delta={b.delta!r}{file}); spent {self.spent.epsilon}"


def _ledger_table(rows: Any) -> Any:
    """Ledger rows (dicts from Rust) as a :class:`pyarrow.Table`."""
    import pyarrow as pa

    schema = pa.schema(
        [
            ("label", pa.string()),
            ("cost", pa.string()),
            ("epsilon", pa.string()),
            ("delta", pa.float64()),
            ("rho", pa.string()),
            ("neighbours", pa.string()),
            ("privacy_unit", pa.string()),
            ("time", pa.string()),
        ]
    )
    return pa.Table.from_pylist(list(rows), schema=schema)


class Domain:
    """The public domain of a table: each attribute and every value it can take.

    The domain is public input, never read from the private data (one record
    with a rare value would otherwise change the release). Built from a dict in
    the library's JSON format, or from a JSON file:

    * ``{"attributes": [{"name": "city", "values": ["Oslo", "Rome"]},
      {"name": "age", "edges": [0, 18, 65, 120]}]}``: categories matched
      exactly, or numbers binned on increasing edges (outliers clamped into the
      end bins, as bounded DP requires; a binned attribute is released as its
      bins' midpoints);
    * ``{"smoker": 2, "age_bucket": 10}``: attributes whose values are the
      integers ``0 .. k-1``.

    >>> d = Domain({"attributes": [{"name": "city", "values": ["Oslo", "Rome"]},
    ...                            {"name": "age", "edges": [0, 18, 65, 120]}]})
    >>> d.columns, d.sizes
    (['city', 'age'], [2, 3])
    >>> d.values("age")
    ['9', '41.5', '92.5']
    """

    def __init__(self, spec: Union[Mapping[str, Any], str, "os.PathLike[str]"]) -> None:
        if isinstance(spec, Mapping):
            text = json.dumps(spec)
        elif isinstance(spec, (str, os.PathLike)):
            with open(spec, encoding="utf-8") as f:
                text = f.read()
        else:
            raise TypeError(
                f"a Domain is built from a dict or the path of a JSON file, not {type(spec).__name__}"
            )
        self._inner = _privq.Domain.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> "Domain":
        """A domain from the text of a JSON spec."""
        self = cls.__new__(cls)
        self._inner = _privq.Domain.from_json(text)
        return self

    @staticmethod
    def template(df: Any) -> "dict[str, Any]":
        """A domain spec to fill in, from the DataFrame's **schema only** (its
        column names and dtypes, never its values): numeric columns get bin-edge
        placeholders, the others category placeholders. ``Domain(spec)`` refuses
        the spec until every ``"TODO: ..."`` placeholder is replaced.

        >>> import pandas as pd
        >>> t = Domain.template(pd.DataFrame({"age": [30], "city": ["Oslo"]}))
        >>> [a["name"] for a in t["attributes"]], list(t["attributes"][0])
        (['age', 'city'], ['name', 'edges'])
        """
        from ._frames import schema_of

        names, numeric = schema_of(df)
        return json.loads(_privq._domain_template(names, numeric))

    @property
    def columns(self) -> "list[str]":
        """The attribute names, in the domain's order."""
        return self._inner.names()

    @property
    def sizes(self) -> "list[int]":
        """How many values (categories or bins) each attribute has."""
        return self._inner.sizes()

    def values(self, column: str) -> "list[str]":
        """The values released for ``column``: its categories, or its bins'
        midpoints as exact decimals."""
        try:
            i = self.columns.index(column)
        except ValueError:
            raise ValueError(f"the domain has no attribute {column!r}") from None
        return self._inner.values(i)

    def kind(self, column: str) -> str:
        """``"categorical"`` or ``"binned"``."""
        return self._inner.kinds()[self.columns.index(column)]

    def to_json(self) -> str:
        """The spec as the library's JSON (one attribute per line)."""
        return self._inner.to_json()

    def __len__(self) -> int:
        return len(self.sizes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and self._inner == other._inner

    def __hash__(self) -> int:
        return hash(self._inner)

    def __repr__(self) -> str:
        attrs = ", ".join(f"{n}: {s}" for n, s in zip(self.columns, self.sizes))
        return f"Domain({attrs})"


def _check_synthesis_args(
    mechanism: str, domain: Any, accountant: Any, rows: Any, allowed: Sequence[str] = ("adaptive",)
) -> None:
    if mechanism not in allowed:
        raise ValueError(
            f"mechanism = {mechanism!r}: "
            + " or ".join(f'"{m}"' for m in allowed)
            + (" here (MWEM has no fitted model to keep or plan)" if "mwem" not in allowed else "")
        )
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a privq.Domain, not {type(domain).__name__}")
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(
            f"accountant must be a privq.Accountant, not {type(accountant).__name__}"
        )
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise ValueError(f"rows = {rows!r}: a non-negative integer")


def synthesize(
    df: Any,
    domain: Domain,
    *,
    epsilon: Number,
    delta: float = 1e-9,
    workload: Optional[str] = None,
    mechanism: str = "adaptive",
    accountant: Optional[Accountant] = None,
    seed: Optional[int] = None,
    neighbours: Optional[str] = None,
    rows: Optional[int] = None,
    return_result: bool = False,
    rounds: Optional[int] = None,
    memory_mib: Optional[int] = None,
    time_budget: Optional[float] = None,
) -> Any:
    """Private synthetic data: a table of the same kind as ``df`` (pandas in,
    pandas out; Polars in, Polars out; a :class:`pyarrow.Table` otherwise), with
    the same column names, order and dtypes, whose rows answer the marginals of
    ``workload`` well.

    The release is ``privq synth --mechanism adaptive``'s, through the same library
    entry point: adaptive marginals measured with exact discrete Gaussian noise
    and fitted with a graphical model, (``epsilon``, ``delta``)-DP through ρ-zCDP.
    With ``mechanism="mwem"`` it is ``privq synth --mechanism mwem``'s: pure
    ε-DP MWEM over a dense histogram of the whole domain (keep it small), under
    replace-one neighbours (n public: the release has as many rows as ``df``
    unless ``rows`` says otherwise); ``delta`` is not used, ``workload`` is
    ``"parity:W"``, ``"conjunctions:W"`` (binary domains; default ``parity:3``)
    or ``"marginals:K"``, ``rounds`` sets T (default T* of Thm 5.2.11,
    clamped to 5..50), and ``memory_mib`` caps the dense histogram and the
    synthetic rows (default 1024, as ``privq synth --memory-mib``): a domain
    whose histogram needs more is refused before anything is charged. Ctrl-C
    stops either mechanism between rounds: :class:`KeyboardInterrupt` is
    raised and nothing is released, but the charge stays spent (the rounds
    already run measured the data).

    * ``domain``: the public :class:`Domain`; every column of ``df`` must be one
      of its attributes and every attribute a column. A value outside the domain
      raises :class:`ValueError` naming the column, the row and the value.
    * ``epsilon``, ``delta``: the release's budget (ε exact, as for
      :class:`Accountant`).
    * ``workload``: ``"marginals:K"`` (default: ``marginals:3``, or all the
      attributes when there are fewer).
    * ``accountant``: charged the release's whole budget before it runs (ρ to a
      zCDP accountant, (ε, δ) to a basic one or a budget file); past its budget
      :class:`BudgetExceeded` is raised and nothing is released.
    * ``seed``: for reproducible tests and demos only (a :class:`SeedWarning`
      says so); by default the noise is drawn from the operating system's
      entropy.
    * An empty table (no rows) is charged and released like any other: under
      add/remove neighbours n is private, so refusing it would reveal it; the
      release is noise (a row or so). A missing value (``None``) is refused
      before the charge.
    * ``neighbours``: ``"add-remove"`` (the adaptive mechanism's default; n
      private, the number of rows released is the model's noisy total) or
      ``"replace"`` (n public; MWEM's only relation).
    * ``rows``: how many synthetic rows to release (public).
    * ``time_budget``: seconds the adaptive mechanism's model fitting may take
      (``privq synth --time-budget``): when the time left holds one more round,
      that round spends all the ε left and is the last, and the final fit stops
      at the budget — a less accurate release, never a larger charge. Reading
      and counting the table come on top. The clock reads no data, but the
      guarantee then assumes the machine's speed does not depend on it (the
      book's "Privacy arguments"); with a ``seed`` the result depends on the
      machine. MWEM does not take it.
    * ``return_result``: return a :class:`Synthesis` instead of the table: the
      table (``.data``) with what the release measured (``.measurements``), its
      charges (``.ledger``), an HTML summary (``.report_html()``) and more rows
      from the same model (``.sample(n)``, post-processing: free).

    :func:`plan_synthesis` takes the same arguments and states what this call
    would cost and do, without charging or sampling.

    Column types: integers, floats, booleans (read as 1/0), strings and
    categoricals come back as they went in. A value is matched against the
    domain as the program reads it from CSV: a float as its shortest decimal
    (``2.0`` is the text ``"2.0"``), so a whole-number column is best kept
    integer. A binned attribute comes back as its bins' midpoints (rounded down
    in an integer column).

    >>> import polars as pl
    >>> df = pl.DataFrame({"city": ["Oslo", "Rome", "Rome"] * 40, "age": [30, 70, 12] * 40})
    >>> domain = Domain({"attributes": [{"name": "city", "values": ["Oslo", "Rome"]},
    ...                                 {"name": "age", "edges": [0, 18, 65, 120]}]})
    >>> out = synthesize(df, domain, epsilon=1, seed=3)
    >>> out.columns, out.dtypes == df.dtypes
    (['city', 'age'], True)
    """
    _check_synthesis_args(mechanism, domain, accountant, rows, ("adaptive", "mwem"))
    _check_relation(mechanism, neighbours, rounds, memory_mib, time_budget)
    _seed(seed)
    result = _release(
        mechanism, df, domain, epsilon, delta, workload, accountant, seed, neighbours, rows, rounds,
        memory_mib=memory_mib, time_budget=time_budget,
    )
    return result if return_result else result.data


def _check_relation(
    mechanism: str,
    neighbours: Optional[str],
    rounds: Any,
    memory_mib: Any = None,
    time_budget: Any = None,
) -> None:
    """MWEM is replace-one only and takes ``rounds`` and ``memory_mib``; the
    adaptive mechanism plans its own, and only it takes ``time_budget`` (whose
    value the library checks)."""
    if time_budget is not None:
        if mechanism == "mwem":
            raise ValueError(
                "time_budget: bounds the adaptive mechanism's model fitting; MWEM's time is "
                "set by rounds and the domain's size"
            )
        if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)):
            raise ValueError(f"time_budget = {time_budget!r}: a positive number of seconds")
    if memory_mib is not None:
        if mechanism != "mwem":
            raise ValueError(
                "memory_mib: MWEM's cap on its dense histogram (mechanism=\"mwem\"); the "
                "adaptive mechanism's model is sized by its workload"
            )
        if isinstance(memory_mib, bool) or not isinstance(memory_mib, int) or memory_mib < 1:
            raise ValueError(f"memory_mib = {memory_mib!r}: a positive integer (MiB)")
    if mechanism == "mwem":
        if neighbours not in (None, "replace"):
            raise ValueError(
                f"neighbours = {neighbours!r}: MWEM is replace-one (n public); omit "
                "neighbours, or use mechanism=\"adaptive\""
            )
        if rounds is not None and (
            isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1
        ):
            raise ValueError(f"rounds = {rounds!r}: a positive integer")
    elif rounds is not None:
        raise ValueError(
            "rounds: MWEM's (mechanism=\"mwem\"); the adaptive mechanism plans its own"
        )


#: MWEM's default memory cap in MiB (``privq synth --memory-mib``'s default).
_MWEM_MEMORY_MIB = 1024


def _release(
    mechanism: str,
    df: Any,
    domain: Domain,
    epsilon: Any,
    delta: Any,
    workload: Optional[str],
    accountant: Optional[Accountant],
    seed: Optional[int],
    neighbours: Optional[str],
    rows: Optional[int],
    rounds: Optional[int],
    fit: int = 0,
    memory_mib: Optional[int] = None,
    time_budget: Optional[float] = None,
) -> "Synthesis":
    """One release; ``fit`` counts a :class:`Synthesizer`'s earlier fits: the
    first (and :func:`synthesize`) uses ``seed`` as ``privq synth --seed`` does,
    a later one a stream derived from (seed, "fit", fit)."""
    if mechanism == "mwem":
        return _mwem(
            df, domain, epsilon, workload, accountant, seed, rows, rounds, fit, memory_mib
        )
    return _synthesis(
        df, domain, epsilon, delta, workload, accountant, seed, neighbours or "add-remove", rows,
        fit, time_budget,
    )


def _mwem(
    df: Any,
    domain: Domain,
    epsilon: Any,
    workload: Optional[str],
    accountant: Optional[Accountant],
    seed: Optional[int],
    rows: Optional[int],
    rounds: Optional[int],
    fit: int = 0,
    memory_mib: Optional[int] = None,
) -> Any:
    """``privq synth --mechanism mwem``'s release (arguments checked by the caller)."""
    from ._frames import from_shape, shape_of, to_columns

    table, kind, columns = to_columns(df, domain)
    shape = shape_of(table, kind, df)
    del table
    out, info, fitted = _privq._synthesize_mwem(
        columns,
        domain._inner,
        _number(epsilon),
        workload,
        rows,
        rounds,
        None if accountant is None else accountant._inner,
        seed,
        fit,
        _MWEM_MEMORY_MIB if memory_mib is None else memory_mib,
    )
    del columns
    return Synthesis._new(from_shape(out, shape, domain), info, fitted, shape, domain, "mwem")


def _synthesis(
    df: Any,
    domain: Domain,
    epsilon: Any,
    delta: Any,
    workload: Optional[str],
    accountant: Optional[Accountant],
    seed: Optional[int],
    neighbours: str,
    rows: Optional[int],
    fit: int = 0,
    time_budget: Optional[float] = None,
) -> "Synthesis":
    """The release behind :func:`synthesize` and :meth:`Synthesizer.fit`
    (arguments checked by the caller)."""
    delta = _delta(delta)

    from ._frames import from_shape, shape_of, to_columns

    table, kind, columns = to_columns(df, domain)
    shape = shape_of(table, kind, df)
    del table
    out, info, fitted = _privq._synthesize(
        columns,
        domain._inner,
        _number(epsilon),
        delta,
        workload,
        neighbours,
        rows,
        None if accountant is None else accountant._inner,
        seed,
        fit,
        None if time_budget is None else float(time_budget),
    )
    del columns
    return Synthesis._new(from_shape(out, shape, domain), info, fitted, shape, domain)


class Synthesis:
    """A synthetic-data release and what it is made of:
    ``synthesize(..., return_result=True)`` or :meth:`Synthesizer.fit` returns one.

    Everything here is public (the release and its parameters); nothing of the
    private table is kept.

    * ``data``: the synthetic table (the kind of DataFrame that went in).
    * ``measurements``: every marginal the release measured, in order (the
      one-way marginals first, as round 0, then one per round), as a DataFrame of
      the same kind: ``round``, ``marginal`` (its attributes, comma-separated),
      ``attributes``, ``cells``, ``sigma`` (the discrete Gaussian noise's
      standard deviation, in counts); for a round, ``rho`` (its ρ, exact text),
      ``select_epsilon`` (its selection's ε, exact text), ``candidates`` and
      ``annealed`` (σ divided by √2 after it); null for round 0, whose charges are in
      the ``ledger``.
    * ``ledger``: the release's charges under its own ρ-zCDP accountant (what
      the run spent, round by round), as a DataFrame of the same kind.
    * ``epsilon``, ``delta``, ``rho``: the guarantee of what was spent (ρ exact;
      ε the conversion at δ, a float). For MWEM (``mechanism == "mwem"``): ε
      exact (a :class:`~fractions.Fraction`), δ 0, ρ ``None``; its
      ``measurements`` are one row per measurement, in order (an optimised run
      may measure fewer than its rounds): ``step``, ``query`` (the chosen
      query's index in the workload), ``value`` (its noisy answer, normalised by
      n) and ``noise_scale`` (the Laplace scale, normalised by n).
    * ``rows``: the number of synthetic rows released.
    * :meth:`sample`: more rows from the same model (post-processing: no charge,
      no data read). :meth:`report_html`: a self-contained HTML summary.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": [0, 1, 1, 0] * 50, "cough": [0, 1, 0, 0] * 50})
    >>> result = synthesize(df, Domain({"smoker": 2, "cough": 2}), epsilon=1, seed=7,
    ...                     return_result=True)
    >>> list(result.measurements.columns)[:3]
    ['round', 'marginal', 'attributes']
    >>> list(result.measurements["marginal"][:2]), list(result.measurements["round"][:2])
    (['smoker', 'cough'], [0, 0])
    >>> len(result.sample(10, seed=1))
    10
    >>> result.report_html().startswith("<!DOCTYPE html>")
    True
    """

    data: Any
    epsilon: float
    delta: float
    rho: Optional[Fraction]
    rows: int

    def __init__(self) -> None:
        raise TypeError(
            "a Synthesis is made by privq.synthesize(..., return_result=True) or "
            "Synthesizer.fit"
        )

    @classmethod
    def _new(cls, data: Any, info: Mapping[str, Any], fitted: Any, shape: Any,
             domain: Domain, mechanism: str = "adaptive") -> "Synthesis":
        self = cls.__new__(cls)
        self.data = data
        self._info = dict(info)
        self._fitted = fitted
        self._shape = shape
        self._domain = domain
        self.mechanism = mechanism
        if mechanism == "mwem":
            self.epsilon = Fraction(*info["epsilon"])
            self.delta = 0.0
            self.rho = None
        else:
            self.epsilon = info["epsilon"]
            self.delta = info["delta"]
            self.rho = _fraction(info["rho"])
        self.rows = info["rows"]
        return self

    def _measurement_table(self) -> Any:
        import pyarrow as pa

        if self.mechanism == "mwem":
            schema = pa.schema(
                [
                    ("step", pa.int64()),
                    ("query", pa.int64()),
                    ("value", pa.float64()),
                    ("noise_scale", pa.float64()),
                ]
            )
            return pa.Table.from_pylist(self._info["measurements"], schema=schema)
        schema = pa.schema(
            [
                ("round", pa.int64()),
                ("marginal", pa.string()),
                ("attributes", pa.int64()),
                ("cells", pa.int64()),
                ("sigma", pa.float64()),
                ("rho", pa.string()),
                ("select_epsilon", pa.string()),
                ("candidates", pa.int64()),
                ("annealed", pa.bool_()),
            ]
        )
        return pa.Table.from_pylist(self._info["measurements"], schema=schema)

    @property
    def measurements(self) -> Any:
        """The measured marginals and their noise, one row per round."""
        from ._frames import frame_of

        return frame_of(self._measurement_table(), self._shape.kind)

    @property
    def ledger(self) -> Any:
        """The release's charges under its own ρ-zCDP accountant, with the
        columns of :meth:`Accountant.ledger` (``time``: when the release was
        charged, before it ran, so the run's data-dependent duration is not in
        it)."""
        from ._frames import frame_of

        return frame_of(_ledger_table(self._info["charges"]), self._shape.kind)

    def sample(self, n: int, *, seed: Optional[int] = None) -> Any:
        """``n`` more synthetic rows from the released model, as a table of the
        same kind, columns and types as :attr:`data`. Post-processing: nothing
        is charged and no data is read (only the model is kept). The rows are
        drawn as the release's were: randomized rounding of the model's counts,
        then moved towards the model's marginals on the workload (so they are
        close to the model, not an unbiased draw from it). ``seed`` as for
        :func:`synthesize` (tests and demos only): the same ``seed`` gives the
        same rows, drawn from a stream derived from (seed, "sample"), never the
        stream a release with that seed drew its noise from."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n = {n!r}: a non-negative integer")
        _seed(seed)
        from ._frames import from_shape

        out = self._fitted.sample(n, seed)
        return from_shape(out, self._shape, self._domain)

    def report_html(self) -> str:
        """A self-contained HTML page (no scripts, no external assets) with the
        guarantee, the measured marginals and the charges."""
        import html

        rho = "—" if self.rho is None else str(self.rho)
        head = (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>privq synthetic data</title><style>"
            "body{font-family:sans-serif;margin:2em;max-width:60em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
            "text-align:right}th{background:#eee}"
            "</style></head><body>"
        )
        parts = [
            head,
            "<h1>privq synthetic data ("
            + ("MWEM" if self.mechanism == "mwem" else "adaptive marginals")
            + ")</h1>",
            "<h2>Guarantee</h2><ul>",
            (
                f"<li>pure ε-DP with ε = {html.escape(str(self.epsilon))}, replace-one "
                "neighbours</li>"
                if self.mechanism == "mwem"
                else f"<li>ρ-zCDP with ρ = {html.escape(rho)}</li>"
                f"<li>(ε, δ)-DP with ε = {self.epsilon:.6g}, δ = {self.delta:.3g}</li>"
            ),
            f"<li>{self.rows} synthetic rows over {len(self._domain)} attributes "
            f"({html.escape(', '.join(self._domain.columns))})</li></ul>",
        ]

        def table(t: Any, title: str) -> None:
            parts.append(f"<h2>{html.escape(title)}</h2><table><tr>")
            parts.extend(f"<th>{html.escape(c)}</th>" for c in t.column_names)
            parts.append("</tr>")
            for row in t.to_pylist():
                parts.append("<tr>")
                parts.extend(
                    f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row.values()
                )
                parts.append("</tr>")
            parts.append("</table>")

        table(self._measurement_table(), "Measured marginals (public)")
        table(_ledger_table(self._info["charges"]), "Charges")
        parts.append("</body></html>\n")
        return "".join(parts)

    def __repr__(self) -> str:
        return (
            f"Synthesis({self.mechanism!r}, {self.rows} rows, "
            f"{len(self._info['measurements'])} measurements, "
            f"rho={self.rho}, epsilon={float(self.epsilon):.4g}, delta={self.delta:g})"
        )


class Synthesizer:
    """Synthetic data in SmartNoise's shape: create, :meth:`fit` once (charged),
    :meth:`sample` as often as needed (free: post-processing of the fitted model).

    ``Synthesizer.create("adaptive", epsilon=..., domain=...)`` (or ``"mwem"``)
    takes the arguments of :func:`synthesize` (``delta``, ``workload``,
    ``accountant``, ``neighbours``, ``seed``; ``rounds`` for MWEM). :meth:`fit` runs the release once, charging the
    accountant its whole budget before anything is measured; it keeps the fitted
    model and the release's details (:attr:`result`, a :class:`Synthesis`), never
    the data. :meth:`sample` draws rows from that model without reading the data
    or charging anything; :meth:`fit_sample` is :meth:`fit` and the release's own
    rows. Fitting again is a new release, charged again. With a ``seed``, the
    first fit draws as :func:`synthesize` with that seed does, and each later fit
    from a stream derived from (seed, "fit", k), so two fits (on neighbouring
    tables, say) never share their noise.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": [0, 1, 1, 0] * 50, "cough": [0, 1, 0, 0] * 50})
    >>> budget = Accountant(epsilon=1, delta=1e-6)
    >>> synth = Synthesizer.create("adaptive", epsilon=1, domain=Domain({"smoker": 2, "cough": 2}),
    ...                            accountant=budget, seed=5)
    >>> synth = synth.fit(df)
    >>> len(synth.sample(1000)), len(synth.sample(5)), budget.spent.epsilon
    (1000, 5, Fraction(1, 1))
    """

    def __init__(self) -> None:
        raise TypeError("make a Synthesizer with Synthesizer.create(\"adaptive\", epsilon=..., domain=...)")

    @classmethod
    def create(
        cls,
        name: str = "adaptive",
        *,
        epsilon: Number,
        domain: Domain,
        delta: float = 1e-9,
        workload: Optional[str] = None,
        accountant: Optional[Accountant] = None,
        neighbours: Optional[str] = None,
        seed: Optional[int] = None,
        rounds: Optional[int] = None,
        memory_mib: Optional[int] = None,
        time_budget: Optional[float] = None,
    ) -> "Synthesizer":
        """A synthesizer for the mechanism ``name`` (``"adaptive"`` or ``"mwem"``);
        the arguments are :func:`synthesize`'s, checked here (the mechanism, the
        domain, the accountant, the relation, ``rounds``, ``memory_mib``,
        ``time_budget``'s type and, for
        MWEM, the workload against the domain) or when :meth:`fit` runs (ε, δ,
        the adaptive mechanism's workload).

        >>> Synthesizer.create("mwem", epsilon=1, domain=Domain({"city": 3, "smoker": 2}))
        Traceback (most recent call last):
        ...
        ValueError: workload = "parity:3" needs a binary (0/1) domain and this one is not; ...
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        _check_synthesis_args(name, domain, accountant, None, ("adaptive", "mwem"))
        _check_relation(name, neighbours, rounds, memory_mib, time_budget)
        if name == "mwem":
            _privq._mwem_check(
                domain._inner, workload, _MWEM_MEMORY_MIB if memory_mib is None else memory_mib
            )
        _seed(seed)
        self = cls.__new__(cls)
        self._args = dict(
            epsilon=epsilon,
            delta=delta,
            workload=workload,
            accountant=accountant,
            seed=seed,
            neighbours=neighbours,
            rounds=rounds,
            memory_mib=memory_mib,
            time_budget=time_budget,
        )
        self._mechanism = name
        self._domain = domain
        self._result: Optional[Synthesis] = None
        self._fits = 0
        return self

    @property
    def result(self) -> "Synthesis":
        """The last fit's :class:`Synthesis` (measurements, ledger, report)."""
        if self._result is None:
            raise PrivqError("the Synthesizer is not fitted: call fit(df) first")
        return self._result

    def fit(self, df: Any, *, rows: Optional[int] = None) -> "Synthesizer":
        """Measures ``df`` and fits the model: one release, charged once (its
        rows, ``rows`` of them or the noisy total, are :attr:`result`'s
        ``data``). Returns the synthesizer."""
        _check_synthesis_args(
            self._mechanism, self._domain, self._args["accountant"], rows, ("adaptive", "mwem")
        )
        a = self._args
        self._result = _release(
            self._mechanism, df, self._domain, a["epsilon"], a["delta"], a["workload"],
            a["accountant"], a["seed"], a["neighbours"], rows, a["rounds"], self._fits,
            memory_mib=a["memory_mib"], time_budget=a["time_budget"],
        )
        self._fits += 1
        return self

    def sample(self, n: int, *, seed: Optional[int] = None) -> Any:
        """``n`` rows from the fitted model (:meth:`Synthesis.sample`): no charge,
        no data read."""
        return self.result.sample(n, seed=seed)

    def fit_sample(self, df: Any, *, rows: Optional[int] = None) -> Any:
        """:meth:`fit`, then the release's own rows."""
        return self.fit(df, rows=rows).result.data

    def __repr__(self) -> str:
        state = "fitted" if self._result is not None else "not fitted"
        return f"Synthesizer({self._mechanism!r}, epsilon={self._args['epsilon']}, {state})"


def _seed(seed: Any) -> None:
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"seed = {seed!r}: an integer in [0, 2**64)")
        warnings.warn(
            f"seed={seed} makes the noise reproducible; use it only for tests and demos",
            SeedWarning,
            stacklevel=3,
        )


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**32:
        raise ValueError(f"{name} = {value!r}: a positive integer")
    return value


def sql(
    query: str,
    tables: Mapping[str, Any],
    *,
    epsilon: Number,
    privacy_unit: Optional[str] = None,
    max_groups: int = 1,
    max_rows: int = 1,
    bounds: Optional[Mapping[str, Sequence[Number]]] = None,
    keys: Optional[Mapping[str, Sequence[str]]] = None,
    delta: Optional[float] = None,
    neighbours: str = "add-remove",
    confidence: float = 0.95,
    quantile_candidates: int = 1000,
    drop_invalid: bool = False,
    accountant: Optional[Accountant] = None,
    seed: Optional[int] = None,
    dry_run: bool = False,
) -> Any:
    """Private counts, sums, means, variances and quantiles by group, from a SQL
    query: ``privq sql``'s release, through the same library entry point, with the
    same checks, the same output columns and, for the same data and seed, the same
    numbers.

    * ``query``: one ``SELECT`` over one table, in ``privq sql``'s subset (group-by
      columns and ``BIN(x, e0, e1, ...)`` histograms; ``COUNT(*)``, ``SUM``,
      ``AVG``, ``VARIANCE``, ``STDDEV``, ``MEDIAN``, ``QUANTILE(x, q)``; ``WHERE``
      comparing columns with literals).
    * ``tables``: ``{name: DataFrame}`` (pandas, Polars, a :class:`pyarrow.Table`
      or any object with ``__arrow_c_stream__``); the query's ``FROM`` names one.
    * ``epsilon``: the budget of the whole query (exact, as for
      :class:`Accountant`), split evenly over its measurements.
    * ``privacy_unit``: the column naming the person or device a row belongs to;
      each unit contributes at most ``max_rows`` rows to each of at most
      ``max_groups`` groups (both 1 by default), rows beyond that dropped at
      random. So ``COUNT(*)`` counts the rows **kept** (with the defaults, the
      units per group), and every estimate and interval is of the bounded,
      clamped data, not of the raw table. Without a unit every row is its own
      unit (a ``UserWarning`` says so). In a float column ``-0.0`` is read as
      ``0.0``.
    * ``bounds``: ``{column: (lo, hi)}``, the public range of every aggregated
      column (values are clamped into it).
    * ``keys``: ``{column: [values]}``, the public groups of each plain group-by
      column (every combination is released; a histogram's bins come from its
      edges); or ``delta``: select the groups privately instead (a ``UserWarning``
      when δ is large, above 1e-3, as the program warns). A ``str`` key is taken
      as it is; any other is converted with the column's declared Arrow type, as
      that column's values are (``True`` is ``"true"``, ``0`` in a float column
      ``"0.0"``); a key the type cannot hold, or ``None``, raises ``ValueError``.
      Keys and bounds must be public, never read from the data
      (``df.col.unique()``, ``df.min()``): those would be releases no ε pays for.
    * ``accountant``: charged the query's whole cost before anything is sampled;
      past its budget :class:`BudgetExceeded` is raised, nothing is released and
      the accountant is unchanged. Its first charge binds it to a privacy unit: a
      release for another (``privacy_unit`` or one record) raises
      :class:`PrivqError`. Without one, the query runs under a fresh
      budget of exactly its cost.
    * ``seed``: for reproducible tests and demos only (a :class:`SeedWarning`
      says so); by default the noise is drawn from the operating system's
      entropy.
    * ``drop_invalid``: drop rows whose unit is missing or whose aggregated or
      binned values are not finite numbers, instead of raising.
    * ``dry_run``: check the request and return its plan instead of releasing:
      a dict with ``epsilon`` and ``epsilon_share`` (exact
      :class:`~fractions.Fraction`: the budget and the even share of each
      measurement and of the group selection), ``delta``, ``neighbours``,
      ``privacy_unit``, ``max_groups``, ``max_rows``, ``groups`` (``"public"``
      or ``"private"``), ``threshold`` (the private selection's, else ``None``),
      ``aggregates`` (``(name, "AVG(temp)")`` pairs) and ``measurements``: one
      dict per noisy measurement (``measurement``, ``column``, ``level``,
      ``epsilon``, ``sensitivity`` and ``noise_scale`` in the measurement's
      units: rows for a count, the column's units for a sum), and ``accepted``
      (whether ``accountant`` would take the charge now; ``None`` without one or
      for a budget file), ``quantile_rank_errors`` (``(name, ranks)`` per
      quantile: with probability at least ``confidence`` the released value's
      rank among its group's bounded values is within ``ranks`` of the
      quantile's, so a group with not many more rows than that may get any value
      between the bounds) and ``warnings`` (what the release would warn
      about). Only the tables' declared schemas are read (column names and
      types): no value is converted or read (a stream is left unopened for the
      real call), nothing is charged, no noise is drawn. A pandas ``object``
      column declares no type: a key for it is taken as its text.

    Returns a table of the input's kind (pandas for pandas, Polars for Polars,
    else a :class:`pyarrow.Table`):
    the group-by columns (text), then each aggregate, with ``NAME_lo`` and
    ``NAME_hi``, the bounds of its confidence interval, where ``privq sql`` prints
    them (not for quantiles: a quantile has no interval, and on small groups at
    small ε it can be far off — it is chosen among candidates spread over the
    bounds, so a group with few units or no data gets an arbitrary candidate:
    when the query also has ``COUNT(*)``, an :class:`AccuracyWarning` names the quantiles
    whose rank bound (``dry_run``'s ``quantile_rank_errors``) is over half some
    groups' noisy counts; a
    variance on a small group is often clamped to 0, with a wide interval). A count is an integer column (its
    release is one: the kept rows plus integer noise); the other estimates and
    every interval bound are floats. Public keys
    come in the order given; privately selected groups in key order.

    >>> import pandas as pd
    >>> readings = pd.DataFrame({
    ...     "device": [f"d{i % 100}" for i in range(300)],
    ...     "region": ["north", "south", "south"] * 100,
    ...     "temp": [float(i % 30) for i in range(300)],
    ... })
    >>> out = sql(
    ...     "SELECT region, COUNT(*) AS n, AVG(temp) AS mean FROM readings GROUP BY region",
    ...     {"readings": readings},
    ...     epsilon=1, privacy_unit="device", max_rows=3,
    ...     bounds={"temp": (-20, 50)}, keys={"region": ["north", "south"]}, seed=1,
    ... )
    >>> list(out.columns)
    ['region', 'n', 'n_lo', 'n_hi', 'mean', 'mean_lo', 'mean_hi']
    >>> list(out["region"])
    ['north', 'south']
    >>> plan = sql(
    ...     "SELECT region, COUNT(*) AS n, AVG(temp) AS mean FROM readings GROUP BY region",
    ...     {"readings": readings},
    ...     epsilon=1, privacy_unit="device", max_rows=3,
    ...     bounds={"temp": (-20, 50)}, keys={"region": ["north", "south"]}, dry_run=True,
    ... )
    >>> plan["epsilon_share"], [m["measurement"] for m in plan["measurements"]]
    (Fraction(1, 2), ['count', 'centred sum'])
    >>> plan["measurements"][0]["noise_scale"]  # 3 rows per unit / (ε = 1/2)
    6.0
    """
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, not {type(query).__name__}")
    if not isinstance(tables, Mapping):
        raise TypeError(
            f"tables must be a mapping {{name: DataFrame}}, not {type(tables).__name__}"
        )
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(
            f"accountant must be a privq.Accountant, not {type(accountant).__name__}"
        )
    _seed(seed)
    pairs = []
    for column, b in (bounds or {}).items():
        if isinstance(b, (str, bytes)) or len(b) != 2:
            raise ValueError(f"bounds[{column!r}] = {b!r}: a pair (lo, hi)")
        pairs.append((str(column), _number(b[0]), _number(b[1])))
    import pyarrow as pa

    from ._frames import as_table, declared_schema, key_texts, release_table, sql_columns

    names = {}
    kinds = {}
    for k, df in tables.items():
        if dry_run:
            # The dry run reads the declared schema only: no value is converted
            # or read, and a stream is left unopened for the real call.
            table = declared_schema(df).empty_table()
        else:
            # Each table is converted to Arrow once (a one-shot stream can be read
            # only once); its kind of DataFrame is kept for the release.
            table, kind = as_table(df)
            kinds[id(table)] = kind
        names[str(k)] = table

    def column_type(column: str) -> Any:
        # The declared type of a key's column, from the schema (None when it
        # declares none: a pandas object column in a dry run).
        for table in names.values():
            if column in table.column_names:
                t = table.schema.field(column).type
                return None if dry_run and pa.types.is_null(t) else t
        return None

    lists = []
    for column, values in (keys or {}).items():
        if isinstance(values, (str, bytes)):
            raise ValueError(
                f"keys[{column!r}] = {values!r}: a list of values, not one string"
            )
        column = str(column)
        lists.append((column, key_texts(column, list(values), column_type(column))))
    if delta is not None:
        delta = _delta(delta)

    if dry_run:
        info = _privq._sql_plan(
            query,
            names,
            _number(epsilon),
            privacy_unit,
            _count("max_groups", max_groups),
            _count("max_rows", max_rows),
            pairs,
            lists,
            delta,
            neighbours,
            float(confidence),
            _count("quantile_candidates", quantile_candidates),
            bool(drop_invalid),
            None if accountant is None else accountant._inner,
        )
        info["epsilon"] = Fraction(*info["epsilon"])
        info["epsilon_share"] = Fraction(*info["epsilon_share"])
        for m in info["measurements"]:
            m["epsilon"] = Fraction(*m["epsilon"])
        return info
    used = {}

    def reader(table: Any, columns: Sequence[str], numbers: Sequence[str]) -> Any:
        used["kind"] = kinds[id(table)]
        return sql_columns(table, columns, numbers)

    out, notes, groups = _privq._sql(
        query,
        names,
        reader,
        _number(epsilon),
        privacy_unit,
        _count("max_groups", max_groups),
        _count("max_rows", max_rows),
        pairs,
        lists,
        delta,
        neighbours,
        float(confidence),
        _count("quantile_candidates", quantile_candidates),
        bool(drop_invalid),
        None if accountant is None else accountant._inner,
        seed,
    )
    for name, ranks, loose in notes:
        if loose:
            warnings.warn(
                f"{name}: in {loose} of {groups} group(s) the released value's rank bound "
                f"(±{ranks:.0f} rows at confidence {confidence}) is over half the noisy count, "
                "so the value there may lie anywhere between the bounds: do not publish it there "
                "(fewer aggregates in the query, each of which takes a share of epsilon, a "
                "larger epsilon, or more units per group narrow it)",
                AccuracyWarning,
                stacklevel=2,
            )
    return release_table(out, used.get("kind", "arrow"))


def discover_domain(
    df: Any,
    *,
    epsilon: Number,
    delta: float = 1e-6,
    accountant: Optional[Accountant] = None,
    neighbours: str = "add-remove",
    seed: Optional[int] = None,
) -> Domain:
    """A domain chosen privately from the data: ``privq domain discover``'s
    release, through the same library entry point (``Discovery``), for the same
    table and seed the same domain.

    Every column of ``df`` becomes a categorical attribute whose values are
    those that occur often enough: each value's count gets discrete Laplace
    noise (scale d/ε for d columns) and the value is kept when the noisy count
    reaches a threshold chosen so that a value held by one record survives with
    probability at most ``delta`` ((ε, δ)-DP private partition selection). A
    value is read as the program reads it from CSV (its text, trimmed); a
    missing value (``None``, null) is refused with a ``ValueError`` naming its
    column and row, and so is a column name given twice, both before anything
    is charged. Numeric columns are discovered as their values'
    texts too; for a numeric column declare its public bounds instead
    (``{"name": "age", "bounds": [0, 120]}``): :func:`synthesize` then chooses
    its bins privately from its own budget.

    * ``accountant``: charged (ε, δ) **before** anything is sampled; past its
      budget :class:`BudgetExceeded` is raised and nothing is released. Without
      one, the discovery runs under a fresh budget of exactly its cost.
    * A column in which no value survives is left out of the returned domain,
      with a ``UserWarning`` naming it (for a numeric column, declare its
      ``bounds`` instead); only when no column keeps a value is
      :class:`PrivqError` raised, after the charge (the accountant keeps it:
      the data were looked at).
    * ``seed``: for reproducible tests and demos only (a :class:`SeedWarning`).

    The released domain is a release like any other: charge it to the same
    accountant as the synthetic data made over it.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"city": ["Oslo"] * 300 + ["Rome"] * 200 + ["Pisa"]})
    >>> budget = Accountant(epsilon=2, delta=1e-5)
    >>> d = discover_domain(df, epsilon=1, delta=1e-6, accountant=budget, seed=1)
    >>> d.values("city"), budget.spent.epsilon
    (['Oslo', 'Rome'], Fraction(1, 1))
    """
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(
            f"accountant must be a privq.Accountant, not {type(accountant).__name__}"
        )
    _seed(seed)
    delta = _delta(delta)
    from ._frames import to_columns

    _table, _kind, columns = to_columns(df, None)
    del _table
    inner, info = _privq._discover_domain(
        columns,
        _number(epsilon),
        delta,
        neighbours,
        None if accountant is None else accountant._inner,
        seed,
    )
    if info["nothing_kept"]:
        names = ", ".join(repr(n) for n in info["nothing_kept"])
        warnings.warn(
            f"domain discovery kept no value of column(s) {names}; they are left out of the "
            "domain (the budget is charged). For a numeric column declare public bounds "
            "instead ({\"name\": ..., \"bounds\": [low, high]}); else give more epsilon",
            UserWarning,
            stacklevel=2,
        )
    domain = Domain.__new__(Domain)
    domain._inner = inner
    return domain


class SynthesisPlan(NamedTuple):
    """What :func:`synthesize` would cost and do (:func:`plan_synthesis`).

    * ``epsilon`` (exact), ``delta``: the (ε, δ) a basic :class:`Accountant` or a
      budget file is charged; ``rho`` (exact): the ρ a zCDP accountant is charged
      (the run spends at most this; it falls short by under 2⁻²⁴, mostly because
      the last selection's ε lies on a 2⁻²⁴ grid).
    * ``neighbours``: the relation the cost is stated under.
    * ``rounds``: planned rounds T; the run takes at most about T
      (``max_rounds`` is the loop's backstop, 4·T).
    * ``one_way_rounds``: the one-way marginals round 0 measures (one per
      attribute). Their ρ is not ``measure_rho`` each: a larger attribute's is
      larger (``max(1, n^(2/3)/2.5)`` times ``measure_rho``), all of them
      together at most ``max(d, T//4)`` times it, every share scaled down alike
      beyond that.
    * ``one_way_rhos`` (exact): those ρ's, one per attribute in the domain's
      order; ``None`` when an attribute is binned privately first (its size is
      known only after the binning).
    * ``binning_rho`` (exact): the ρ of that private binning of the attributes
      declared by their bounds only, charged first; ``None`` when there are none.
    * ``measure_rho``, ``select_epsilon`` (exact): the budget of each
      measurement and each selection in rounds 1, 2, … before annealing.
    * ``candidates``: the marginals the workload offers for selection.
    * ``rows``: the number of synthetic rows, or ``None`` when it is **hidden**:
      under add/remove neighbours (n private) with no ``rows`` given, the run
      releases the model's noisy total, known only after it runs.
    * ``charge``, ``accepted``: with an in-memory ``accountant``, the cost it
      would be charged (exact text) and whether it would accept the charge now;
      ``None`` otherwise (a budget file is shared by processes, so only the
      charge itself, under the file's lock, can tell).
    """

    epsilon: Fraction
    delta: float
    rho: Optional[Fraction]
    neighbours: str
    rounds: int
    one_way_rounds: int
    one_way_rhos: Optional[List[Fraction]]
    binning_rho: Optional[Fraction]
    max_rounds: int
    measure_rho: Fraction
    select_epsilon: Fraction
    candidates: int
    rows: Optional[int]
    charge: Optional[str]
    accepted: Optional[bool]


def plan_synthesis(
    df: Any,
    domain: Domain,
    *,
    epsilon: Number,
    delta: float = 1e-9,
    workload: Optional[str] = None,
    mechanism: str = "adaptive",
    accountant: Optional[Accountant] = None,
    neighbours: str = "add-remove",
    rows: Optional[int] = None,
    time_budget: Optional[float] = None,
) -> SynthesisPlan:
    """A dry run of :func:`synthesize` with the same arguments (no ``seed``: it
    draws nothing): validates everything the release checks before it samples
    (the parameters, the workload, the table against the domain, the schedule
    of rounds) and returns a :class:`SynthesisPlan` of what the release would
    cost and do. **Nothing is charged and nothing is sampled**; an
    ``accountant`` is only asked whether it would accept the charge. An input
    that :func:`synthesize` refuses raises the same exception here.

    The plan reads and validates the data: it is for the data holder. Its
    exceptions may name rows and values of ``df`` and are **not** private
    outputs. Only the returned plan is free of the data (its cost and rounds
    do not depend on it; ``rows`` is ``None`` under add/remove neighbours, and
    the number of rows of ``df`` under ``neighbours="replace"``, where n is
    public anyway).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": [0, 1, 1, 0] * 50, "cough": [0, 1, 0, 0] * 50})
    >>> domain = Domain({"smoker": 2, "cough": 2})
    >>> budget = Accountant(epsilon=1, delta=1e-6)
    >>> plan = plan_synthesis(df, domain, epsilon=1, accountant=budget)
    >>> plan.epsilon, plan.rounds, plan.rows, plan.accepted
    (Fraction(1, 1), 32, None, True)
    >>> plan_synthesis(df, domain, epsilon=2, accountant=budget).accepted
    False
    >>> plan_synthesis(df, domain, epsilon=1, neighbours="replace").rows
    200
    >>> budget.spent.epsilon
    Fraction(0, 1)
    """
    _check_synthesis_args(mechanism, domain, accountant, rows)
    _check_relation(mechanism, None, None, None, time_budget)
    delta = _delta(delta)

    from ._frames import to_columns

    _table, _kind, columns = to_columns(df, domain)
    p = _privq._plan_synthesis(
        columns,
        domain._inner,
        _number(epsilon),
        delta,
        workload,
        neighbours,
        rows,
        None if accountant is None else accountant._inner,
        None if time_budget is None else float(time_budget),
    )
    return SynthesisPlan(
        epsilon=Fraction(*p["epsilon"]),
        delta=p["delta"],
        rho=_fraction(p["rho"]),
        neighbours=p["neighbours"],
        rounds=p["rounds"],
        one_way_rounds=p["one_way_rounds"],
        one_way_rhos=None
        if p["one_way_rhos"] is None
        else [Fraction(*r) for r in p["one_way_rhos"]],
        binning_rho=_fraction(p["binning_rho"]),
        max_rounds=p["max_rounds"],
        measure_rho=Fraction(*p["measure_rho"]),
        select_epsilon=Fraction(*p["select_epsilon"]),
        candidates=p["candidates"],
        rows=p["rows"],
        charge=p["charge"],
        accepted=p["accepted"],
    )


from . import ldp  # noqa: E402  (the submodule needs the names above)
from .stats import count, histogram, mean, quantile, sum, variance  # noqa: E402,A004

__all__ += ["count", "histogram", "mean", "quantile", "sum", "variance"]
