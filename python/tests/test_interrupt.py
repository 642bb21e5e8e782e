"""Ctrl-C stops a long release after its current round: KeyboardInterrupt,
nothing released, the accountant's charge kept (the rounds run measured the
data)."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from pathlib import Path

import pytest

import privq

ATTRS, SIZE = 24, 8


def wide():
    """A table whose release takes seconds: 16 rounds per attribute, each a fit
    (about 3 s in the dev build); the interrupt comes after 0.3 s."""
    n = 3000
    cols = {
        f"a{j}": [(i * (j + 3) + i // (j + 1)) % SIZE for i in range(n)] for j in range(ATTRS)
    }
    return cols, privq.Domain({f"a{j}": SIZE for j in range(ATTRS)})


def test_ctrl_c_interrupts_a_release():
    import pyarrow as pa

    # interrupt_main does nothing unless SIGINT has Python's handler: an earlier
    # test or library may have replaced it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    cols, domain = wide()
    df = pa.table(cols)
    acct = privq.Accountant(epsilon=3, delta=1e-6)
    fired = threading.Event()

    def interrupt():
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(0.3, interrupt)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            privq.synthesize(df, domain, epsilon=1, accountant=acct, workload="marginals:3")
            # Not reached when the interrupt stops the run; if the run ended first,
            # wait for the interrupt here so that it cannot hit a later test.
            fired.wait(5)
            time.sleep(1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    stopped = time.monotonic() - started
    # Raised by the extension call itself (the run was stopped), not later in Python.
    last = info.traceback[-1]
    assert Path(str(last.path)).name == "__init__.py" and "_synthesize" in str(last.statement), (
        "the release finished before the interrupt: make the table wider"
    )
    assert stopped < 10, f"the run took {stopped:.1f} s to stop"
    assert acct.spent.epsilon == 1, "the charge made before the run is kept"
    assert len(acct.ledger()) == 1
