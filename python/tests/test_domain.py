"""Domains: from a dict or a JSON file, and templates from the schema only."""

from __future__ import annotations

import json

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import privq

from conftest import SPEC


def test_from_a_dict_a_file_and_json(tmp_path):
    d = privq.Domain(SPEC)
    assert d.columns == ["city", "age", "smoker"] and d.sizes == [3, 3, 2] and len(d) == 3
    path = tmp_path / "d.json"
    path.write_text(json.dumps(SPEC))
    assert privq.Domain(path) == d == privq.Domain(str(path)) == privq.Domain.from_json(d.to_json())
    assert privq.Domain({"a": 3, "b": 2}).values("a") == ["0", "1", "2"]
    assert d.values("age") == ["9", "41.5", "92.5"] and d.kind("age") == "binned"
    assert "city: 3" in repr(d)


@pytest.mark.parametrize(
    "spec",
    [
        {"attributes": []},
        {"attributes": [{"name": "a", "values": []}]},
        {"attributes": [{"name": "a", "edges": [2, 1]}]},
        {"a": 0},
        {"attributes": [{"name": "a", "values": ["x", "x"]}]},
    ],
)
def test_bad_specs_are_value_errors(spec):
    with pytest.raises(ValueError):
        privq.Domain(spec)


def test_templates_read_the_schema_never_the_values():
    a = pd.DataFrame({"age": [30, 40], "city": ["Oslo", "Rome"], "smoker": [True, False]})
    b = pd.DataFrame({"age": [99], "city": ["Lima"], "smoker": [False]})
    t = privq.Domain.template(a)
    assert t == privq.Domain.template(b)
    assert [list(x) for x in t["attributes"]] == [["name", "edges"], ["name", "values"], ["name", "values"]]
    assert privq.Domain.template(pl.from_pandas(a)) == t
    assert privq.Domain.template(pa.Table.from_pandas(a)) == t
    with pytest.raises(ValueError, match="TODO"):
        privq.Domain(t)
