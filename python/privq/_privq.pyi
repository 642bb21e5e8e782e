"""Type stubs of the extension module ``privq._privq`` (the Rust half of privq).

Use the ``privq`` package: its classes wrap these with Fractions, DataFrames and
docstrings.
"""

from fractions import Fraction
from decimal import Decimal
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, TypedDict, Union

_Number = Union[int, float, str, Fraction, Decimal]
_Pair = Tuple[int, int]

class PrivqError(Exception):
    """Base class of privq's own errors."""

class BudgetExceeded(PrivqError):
    """The budget would be exceeded; nothing was charged or released."""

class _BudgetDict(TypedDict):
    kind: str
    epsilon: _Pair
    delta: float
    rho: Optional[_Pair]
    budget_file: Optional[str]

class _SpentDict(TypedDict):
    epsilon: Optional[_Pair]
    epsilon_f64: float
    delta: float
    rho: Optional[_Pair]

class _RemainingDict(TypedDict):
    epsilon: Optional[_Pair]
    delta: float
    rho: Optional[_Pair]

class _Charge(TypedDict):
    label: str
    cost: str
    epsilon: Optional[str]
    delta: float
    rho: Optional[str]
    neighbours: Optional[str]
    privacy_unit: Optional[str]
    time: Optional[str]  # UTC, when the charge was accepted

class Domain:
    @staticmethod
    def from_json(text: str) -> "Domain": ...
    def to_json(self) -> str: ...
    def names(self) -> list[str]: ...
    def sizes(self) -> list[int]: ...
    def kinds(self) -> list[str]: ...
    def values(self, i: int) -> list[str]: ...

class Accountant:
    def __init__(
        self,
        epsilon: Optional[_Number] = None,
        delta: float = 0.0,
        budget_file: Optional[str] = None,
    ) -> None: ...
    @staticmethod
    def zcdp(rho: _Number, delta: float) -> "Accountant": ...
    def budget(self) -> _BudgetDict: ...
    def spent(self) -> _SpentDict: ...
    def remaining(self) -> _RemainingDict: ...
    def ledger(self) -> list[_Charge]: ...
    def _after_fork_in_child(self) -> None: ...

class _SynthInfo(TypedDict, total=False):
    rho: Optional[_Pair]
    epsilon: float
    delta: float
    rows: int
    records_in: int  # only under neighbours="replace" (n public); absent otherwise
    ledger: str
    measurements: list[_Measurement]
    charges: list[_Charge]

class _Measurement(TypedDict):
    round: int  # 0: the one-way marginals
    marginal: str  # the attributes, comma-separated
    attributes: int
    cells: int
    sigma: float
    rho: Optional[str]  # exact; None for round 0 (the one-way marginals)
    select_epsilon: Optional[str]  # exact; None for round 0
    candidates: Optional[int]  # None for round 0
    annealed: Optional[bool]  # None for round 0

class Synthesis:
    """A fitted release: the model only (no data); sampling it charges nothing."""

    def sample(self, n: int, seed: Optional[int]) -> list[Tuple[str, list[str], bytes]]: ...  # seed: a stream derived from (seed, "sample")

def _domain_template(names: Sequence[str], numeric: Sequence[str]) -> str: ...
def _synthesize(
    columns: Sequence[Tuple[str, list[Any], bytes]],
    domain: Domain,
    epsilon: _Number,
    delta: float,
    workload: Optional[str],
    neighbours: str,
    rows: Optional[int],
    accountant: Optional[Accountant],
    seed: Optional[int],
    fit: int = 0,  # a Synthesizer's earlier fits: 0 uses seed as the CLI does, k > 0 a derived stream
    time_budget: Optional[float] = None,  # seconds for the model fitting (privq synth --time-budget)
) -> Tuple[list[Tuple[str, list[str], bytes]], _SynthInfo, Synthesis]: ...

def _sql(
    query: str,
    tables: Mapping[str, Any],
    reader: Callable[[Any, Sequence[str]], Tuple[list[str], list[Tuple[str, list[Optional[str]]]]]],
    epsilon: _Number,
    privacy_unit: Optional[str],
    max_groups: int,
    max_rows: int,
    bounds: Sequence[Tuple[str, _Number, _Number]],
    keys: Sequence[Tuple[str, Sequence[str]]],
    delta: Optional[float],
    neighbours: str,
    confidence: float,
    quantile_candidates: int,
    drop_invalid: bool,
    accountant: Optional[Accountant],
    seed: Optional[int],
) -> Tuple[
    list[Tuple[str, str, list[Any]]],  # type: "text", "int" (a count) or "float"
    list[Tuple[str, float, int]],  # quantile, rank bound, groups where it is loose
    int,  # released groups
]: ...

class _SqlMeasurement(TypedDict):
    measurement: str  # "count", "sum", "centred sum", "centred squares" or "quantile"
    column: Optional[str]
    level: Optional[float]  # a quantile's
    epsilon: _Pair
    sensitivity: float  # over one privacy unit, in the measurement's units
    noise_scale: float  # sensitivity / epsilon, same units

class _SqlPlan(TypedDict):
    table: str
    epsilon: _Pair
    delta: float
    epsilon_share: _Pair
    neighbours: str
    privacy_unit: Optional[str]
    max_groups: int
    max_rows: int
    groups: str  # "public" or "private"
    threshold: Optional[int]
    aggregates: list[Tuple[str, str]]
    measurements: list[_SqlMeasurement]
    accepted: Optional[bool]  # an in-memory accountant's answer; None otherwise
    warnings: list[str]

def _sql_plan(
    query: str,
    tables: Mapping[str, Any],  # only each table's column_names is read
    epsilon: _Number,
    privacy_unit: Optional[str],
    max_groups: int,
    max_rows: int,
    bounds: Sequence[Tuple[str, _Number, _Number]],
    keys: Sequence[Tuple[str, Sequence[str]]],
    delta: Optional[float],
    neighbours: str,
    confidence: float,
    quantile_candidates: int,
    drop_invalid: bool,
    accountant: Optional[Accountant],
) -> _SqlPlan: ...  # no value read, nothing charged

class _PlanDict(TypedDict):
    epsilon: _Pair
    delta: float
    rho: Optional[_Pair]
    neighbours: str
    rounds: int
    one_way_rounds: int
    max_rounds: int
    measure_rho: _Pair
    select_epsilon: _Pair
    candidates: int
    rows: Optional[int]  # None: hidden (the model's noisy total, under add/remove)
    charge: Optional[str]  # in-memory accountants only
    accepted: Optional[bool]  # in-memory accountants only

class _MwemMeasurement(TypedDict):
    step: int  # 1, 2, ... in the order measured
    query: int  # the chosen query's index in the workload
    value: float  # its noisy answer, normalised by n
    noise_scale: float  # the Laplace scale, normalised by n

class _MwemInfo(TypedDict):
    epsilon: _Pair
    rows: int
    rounds: int
    records_in: int  # n is public under replace-one neighbours
    charges: list[_Charge]
    measurements: list[_MwemMeasurement]

class MwemSynthesis:
    """A fitted MWEM release: its distribution only (no data); sampling charges nothing."""

    def sample(self, n: int, seed: Optional[int]) -> list[Tuple[str, list[str], bytes]]: ...  # seed: a stream derived from (seed, "sample")

def _synthesize_mwem(
    columns: Sequence[Tuple[str, list[Any], bytes]],
    domain: Domain,
    epsilon: _Number,
    workload: Optional[str],
    rows: Optional[int],
    rounds: Optional[int],
    accountant: Optional[Accountant],
    seed: Optional[int],
    fit: int = 0,  # as for _synthesize
    memory_mib: int = 1024,  # the dense histogram's and the rows' cap (privq synth --memory-mib)
) -> Tuple[list[Tuple[str, list[str], bytes]], _MwemInfo, MwemSynthesis]: ...

def _mwem_check(domain: Domain, workload: Optional[str], memory_mib: int) -> None: ...  # ValueError: a bad workload for the domain, or cap

class _DiscoveryInfo(TypedDict):
    threshold: int
    charges: list[_Charge]  # the discovery's charge (whoever paid it), stamped when charged
    nothing_kept: list[str]  # the columns that kept no value (left out of the domain)

def _discover_domain(
    columns: Sequence[Tuple[str, list[Any], bytes]],
    epsilon: _Number,
    delta: float,
    neighbours: str,
    accountant: Optional[Accountant],
    seed: Optional[int],
) -> Tuple[Domain, _DiscoveryInfo]: ...

def _plan_synthesis(
    columns: Sequence[Tuple[str, list[Any], bytes]],
    domain: Domain,
    epsilon: _Number,
    delta: float,
    workload: Optional[str],
    neighbours: str,
    rows: Optional[int],
    accountant: Optional[Accountant],
    time_budget: Optional[float] = None,
) -> _PlanDict: ...

class Campaign:
    def __init__(
        self,
        mechanism: str,
        epsilon: _Number,
        domain: Optional[int] = None,
        queries: Optional[Sequence[str]] = None,
        bound: Optional[int] = None,
        grid_exponent: Optional[int] = None,
        memory_mib: int = 256,
    ) -> None: ...
    @staticmethod
    def from_json(text: str, memory_mib: int = 256) -> "Campaign": ...
    def to_json(self) -> str: ...
    def mechanism(self) -> str: ...
    def epsilon(self) -> _Pair: ...
    def domain(self) -> Optional[int]: ...
    def report_len(self) -> int: ...

class _EstimateRow(TypedDict):
    group: str
    item: Optional[int]  # None for a mean
    estimate: float
    std_error: float
    ci_low: float
    ci_high: float
    post_processed: Optional[float]
    reports: int

def _ldp_simulate(values: bytes, campaign: Campaign, seed: Optional[int]) -> bytes: ...
def _ldp_aggregate(
    inputs: Sequence[Union[bytes, str]],
    campaign: Campaign,
    confidence: float,
    post: str,
    databases: Sequence[str] = (),  # collector databases (privq serve --db), read first, read-only; the same file twice: ValueError
) -> Tuple[list[_EstimateRow], str, str, str]: ...  # rows, outcome, the program's summary, one sentence
