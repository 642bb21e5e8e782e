"""Type stubs of the extension module ``privq._privq`` (the Rust half of privq).

Use the ``privq`` package: its classes wrap these with Fractions, DataFrames and
docstrings.
"""

from fractions import Fraction
from decimal import Decimal
from typing import Any, Optional, Sequence, Tuple, TypedDict, Union

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
    time: Optional[str]

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
) -> Tuple[list[Tuple[str, list[str], bytes]], _SynthInfo]: ...
