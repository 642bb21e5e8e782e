"""DataFrames in and out through Arrow, without a text round trip per row.

A column goes to Rust in dictionary form: its distinct values (few) and one int32
code per row as a single ``bytes`` buffer. Rust maps the values onto the domain
by the library's rule (the rule of ``privq synth``'s CSV reader) and builds the
records; the synthetic table comes back the same way, column by column, and is
cast to the input's column types. Nothing here looks at a value to decide
anything about privacy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from . import Domain

PANDAS, POLARS, ARROW = "pandas", "polars", "arrow"


def _kind(df: Any) -> str:
    module = type(df).__module__.split(".")[0]
    if module == "pandas":
        return PANDAS
    if module == "polars":
        return POLARS
    return ARROW


def as_table(df: Any) -> Tuple[pa.Table, str]:
    """The Arrow table of ``df`` and the kind of DataFrame to return."""
    kind = _kind(df)
    if isinstance(df, pa.Table):
        return df, ARROW
    if isinstance(df, pa.RecordBatch):
        return pa.Table.from_batches([df]), ARROW
    if kind == PANDAS:
        # The plain pandas path (any pandas with pyarrow); the index is not data.
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"expected a DataFrame, not {type(df).__name__}")
        return pa.Table.from_pandas(df, preserve_index=False), PANDAS
    if hasattr(df, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(df).read_all(), kind
    if kind == POLARS and hasattr(df, "to_arrow"):
        return df.to_arrow(), POLARS
    raise TypeError(
        f"{type(df).__name__} is not a DataFrame privq can read: pass a pandas or Polars "
        "DataFrame, a pyarrow.Table, or any object with __arrow_c_stream__"
    )


def declared_schema(df: Any) -> pa.Schema:
    """The Arrow schema ``df`` declares, read without converting or reading a
    value, and without opening a stream (a one-shot stream stays unread). A
    pandas column of ``object`` dtype has no declared type: it is ``null`` here
    (its type would be inferred from its values). An object that offers only a
    stream (``__arrow_c_stream__`` and no ``__arrow_c_schema__``) is refused with
    :class:`TypeError`: opening the stream to read its schema could consume it."""
    kind = _kind(df)
    if isinstance(df, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return df.schema
    if kind == PANDAS:
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"expected a DataFrame, not {type(df).__name__}")
        # No rows: no value is converted (an object column becomes null).
        return pa.Schema.from_pandas(df.iloc[:0], preserve_index=False)
    if kind == POLARS and hasattr(df, "head") and hasattr(df, "to_arrow"):
        return df.head(0).to_arrow().schema
    if hasattr(df, "__arrow_c_schema__"):
        return pa.schema(df)
    if hasattr(df, "__arrow_c_stream__"):
        raise TypeError(
            f"{type(df).__name__} offers only a stream (no __arrow_c_schema__): its schema "
            "cannot be read without opening it, which could consume it; pass a "
            "pyarrow.Table or RecordBatchReader, or a pandas or Polars DataFrame"
        )
    raise TypeError(
        f"{type(df).__name__} is not a DataFrame privq can read: pass a pandas or Polars "
        "DataFrame, a pyarrow.Table, or any object with __arrow_c_stream__"
    )


def schema_of(df: Any) -> Tuple[List[str], List[str]]:
    """The column names and the numeric ones, from the declared schema only."""
    kind = _kind(df)
    if kind == PANDAS:
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        names = [str(c) for c in df.columns]
        numeric = [
            str(c) for c, t in df.dtypes.items() if is_numeric_dtype(t) and not is_bool_dtype(t)
        ]
        return names, numeric
    if kind == POLARS:
        schema = df.schema
        names = list(schema.names())
        numeric = [n for n, t in schema.items() if t.is_numeric()]
        return names, numeric
    schema = declared_schema(df)
    numeric = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]
    return list(schema.names), numeric


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_text(t: pa.DataType) -> bool:
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t))
    )


def _cast_values(texts: pa.Array, t: pa.DataType, binned: bool) -> pa.Array:
    """The domain's value texts as column type ``t`` (a binned attribute's
    midpoints rounded down in an integer column)."""
    if _is_text(t):
        return texts.cast(t)
    if pa.types.is_integer(t) and binned:
        return pc.floor(texts.cast(pa.float64())).cast(t)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return texts.cast(pa.float64()).cast(t)
    if pa.types.is_boolean(t):
        return pc.equal(texts.cast(pa.int64()), 1)
    return texts.cast(t)


def _domain_values(domain: "Domain", name: str, t: pa.DataType) -> pa.Array:
    """The values of ``name`` as column type ``t``, refused before anything is
    charged when one cannot be written in that type."""
    texts = pa.array(domain.values(name), pa.string())
    binned = domain.kind(name) == "binned"
    if pa.types.is_boolean(_value_type(t)) and sorted(domain.values(name)) != ["0", "1"]:
        # Anything else would be relabelled on the way out (every value but 1 as False).
        raise ValueError(
            f"column {name!r} is boolean, and its domain values ({', '.join(domain.values(name)[:5])}"
            f"{', ...' if len(texts) > 5 else ''}) are not exactly \"0\" and \"1\": give it "
            "the values [\"0\", \"1\"] (or 2 as its size), or make the column integer or text"
        )
    try:
        return _cast_values(texts, _value_type(t), binned)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValueError(
            f"column {name!r} is of type {t}, and the domain's values for it "
            f"({', '.join(domain.values(name)[:5])}{', ...' if len(texts) > 5 else ''}) "
            f"cannot all be written in that type: {e}"
        ) from None


def to_columns(df: Any, domain: Optional["Domain"]) -> Tuple[pa.Table, str, list]:
    """``df`` in dictionary form: ``(name, distinct values, int32 codes as bytes)``
    per column, after checking that each released column can keep its type
    (with no ``domain``, every column as it is: for domain discovery)."""
    table, kind = as_table(df)
    names = set() if domain is None else set(domain.columns)
    columns = []
    for field, column in zip(table.schema, table.columns):
        if field.name in names:
            _domain_values(domain, field.name, field.type)
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if not pa.types.is_dictionary(array.type):
            if _is_text(array.type) and not pa.types.is_large_string(array.type):
                array = array.cast(pa.large_string())
            array = array.dictionary_encode(null_encoding="encode")
        values = array.dictionary
        if _is_text(values.type) and not pa.types.is_large_string(values.type):
            values = values.cast(pa.large_string())
        values = values.to_pylist()
        indices = array.indices
        if indices.null_count:
            # A null entry: one more dictionary value, missing.
            indices = indices.fill_null(len(values))
            values.append(None)
        columns.append((field.name, values, _int32_bytes(indices.cast(pa.int32()))))
    return table, kind, columns


def _int32_bytes(indices: pa.Array) -> bytes:
    """The values of a null-free int32 array as one ``bytes`` (native order)."""
    if indices.null_count:
        raise ValueError("internal: dictionary codes with nulls")
    buffer = indices.buffers()[1]
    start = indices.offset * 4
    if buffer is None:
        return b""
    return buffer.to_pybytes()[start : start + 4 * len(indices)]


class Shape(NamedTuple):
    """What a release needs to give its rows ``df``'s form: the Arrow schema
    (types only: no schema or field metadata, which for pandas records e.g. a
    categorical's number of categories), the kind of DataFrame, and each
    column's type: pandas' dtype, or Polars' data type, with a categorical or
    enum type kept as its kind's name (``"category"``, ``"Categorical"``,
    ``"Enum"``) and not its categories, which a categorical built from the data
    lists. Nothing of the private table is kept: a fitted
    :class:`privq.Synthesizer` keeps this, never the data."""

    schema: pa.Schema
    kind: str
    types: Any


def shape_of(table: pa.Table, kind: str, df: Any) -> Shape:
    """``df``'s :class:`Shape` (``table`` is its Arrow form): its column types,
    never a value."""
    schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in table.schema])
    if kind == PANDAS:
        types = {
            c: "category" if str(t) == "category" else t for c, t in df.dtypes.items()
        }
    elif kind == POLARS:
        import polars as pl

        types = {
            c: type(t).__name__ if isinstance(t, (pl.Categorical, pl.Enum)) else t
            for c, t in df.schema.items()
        }
    else:
        types = None
    return Shape(schema, kind, types)


def from_columns(
    out: Sequence[Tuple[str, List[str], bytes]],
    table: pa.Table,
    kind: str,
    df: Any,
    domain: "Domain",
) -> Any:
    """The synthetic columns as a table of ``df``'s kind, in ``df``'s column
    order and types."""
    return from_shape(out, shape_of(table, kind, df), domain)


def from_shape(
    out: Sequence[Tuple[str, List[str], bytes]],
    shape: Shape,
    domain: "Domain",
) -> Any:
    """The synthetic columns as a table of the :class:`Shape`'s kind, in its
    column order and types."""
    table_schema, kind = shape.schema, shape.kind
    released = {}
    for name, _texts, codes in out:
        n = len(codes) // 4
        indices = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(codes)])
        released[name] = indices
    arrays = []
    for field in table_schema:
        indices = released[field.name]
        t = field.type
        values = _domain_values(domain, field.name, t)
        if pa.types.is_dictionary(t):
            index_type = t.index_type
            if len(values) > 127 and pa.types.is_int8(index_type):
                index_type = pa.int32()
            arrays.append(pa.DictionaryArray.from_arrays(indices.cast(index_type), values))
        elif _is_text(t) and not pa.types.is_large_string(t):
            # `take` has no kernel for string views: take, then cast.
            text = _domain_values(domain, field.name, pa.large_string())
            arrays.append(text.take(indices).cast(t))
        else:
            arrays.append(values.take(indices))
    result = pa.Table.from_arrays(arrays, names=table_schema.names)
    if kind == PANDAS:
        frame = result.to_pandas()
        for c, dtype in shape.types.items():
            if str(dtype) != "category" and frame[c].dtype != dtype:
                frame[c] = frame[c].astype(dtype)
        return frame
    if kind == POLARS:
        import polars as pl

        frame = pl.from_arrow(result)
        casts = {
            c: t
            for c, t in shape.types.items()
            if not isinstance(t, str) and frame.schema[c] != t
        }
        return frame.cast(casts) if casts else frame
    return result


def _text_array(column: Any, name: str) -> pa.ChunkedArray:
    """Every value of ``column`` (an Arrow array or chunked array) as the text a
    CSV file would hold, in a ``large_string`` array: a float as its shortest
    round-trip decimal (``-0.0`` as ``0.0``, so that the two zeros are one unit or
    key, as they are one number), a missing value as null."""
    t = _value_type(column.type)
    if pa.types.is_dictionary(column.type):
        # `take` has no kernel for string views: decode from large strings.
        if _is_text(t):
            t = pa.large_string()
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        column = pa.chunked_array([c.dictionary.cast(t).take(c.indices) for c in chunks], type=t)
    if pa.types.is_floating(t):
        # -0.0 + 0.0 is 0.0; every other float is unchanged.
        texts = [None if x is None else repr(float(x) + 0.0) for x in column.to_pylist()]
        return pa.chunked_array([pa.array(texts, pa.large_string())])
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column], type=column.type)
    try:
        return column.cast(pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValueError(f"column {name!r} of type {t} cannot be read as text: {e}") from None


def _texts(column: Any, name: str) -> list:
    """Every value of ``column`` as its text (:func:`_text_array`), ``None`` for a
    missing value."""
    return _text_array(column, name).to_pylist()


def _validity(array: pa.Array) -> Tuple[Optional[bytes], int]:
    """Arrow's validity bitmap of ``array`` (bit ``offset + i`` set where value
    ``i`` is present, least significant bit first) and that offset; ``(None, 0)``
    when no value is missing."""
    bitmap = array.buffers()[0]
    if array.null_count == 0 or bitmap is None:
        return None, 0
    return bitmap.to_pybytes(), array.offset


def _column_buffers(column: Any, name: str, as_numbers: bool) -> tuple:
    """``column`` as the library's reader takes it, in copies of Arrow's own
    buffers (no Python object per value): ``("numbers", float64 values, None,
    validity, offset)`` for a column of integers or floats read only as numbers
    (each value the ``float64`` its text would parse to: an integer rounded to
    the nearest, ties to even; a float as it is), else ``("text", int64 offsets,
    UTF-8 bytes, validity, offset)`` of its texts (:func:`_text_array`). Native
    byte order; validity as :func:`_validity`."""
    t = column.type
    array = None
    if as_numbers and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        # `safe=False`: an integer past 2**53 is rounded to the nearest double, ties
        # to even, as its decimal text is when parsed. A cast Arrow lacks (float16
        # before pyarrow 16) leaves the column to its texts, which read the same.
        try:
            array = pc.cast(column, pa.float64(), safe=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            pass
    if array is not None:
        array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
        n, at = len(array), array.offset
        values = array.buffers()[1].to_pybytes()[8 * at : 8 * (at + n)]
        return ("numbers", values, None, *_validity(array))
    array = _text_array(column, name).combine_chunks()
    n, at = len(array), array.offset
    offsets = array.buffers()[1].to_pybytes()[8 * at : 8 * (at + n + 1)]
    data = array.buffers()[2]
    return ("text", offsets, b"" if data is None else data.to_pybytes(), *_validity(array))


def sql_columns(
    table: pa.Table, names: Sequence[str], numbers: Sequence[str]
) -> Tuple[List[str], int, list]:
    """All of ``table``'s column names, its number of rows, and ``(name, kind, a,
    b, c)`` for each of ``names`` it has (:func:`_column_buffers`; a column in
    ``numbers`` — one the query reads only as numbers — as numbers when it holds
    them): every value as the library reads the text a CSV file would hold, for it
    to read exactly as ``privq sql`` reads that file."""
    columns = [
        (name, *_column_buffers(table.column(name), name, name in numbers))
        for name in names
        if name in table.column_names
    ]
    return list(table.column_names), table.num_rows, columns


def key_texts(column: str, values: Sequence[Any], t: Optional[pa.DataType]) -> List[str]:
    """The public keys ``values`` of ``column`` as texts the data's values are
    compared with. A text is taken as it is (the program's ``--keys``); any other
    value is converted with the column's declared type ``t`` (the schema only,
    never the data) and then by the data's rule (:func:`_texts`), so ``True`` in a
    boolean column is ``"true"`` and ``0`` in a float column ``"0.0"``. A value
    the type cannot hold, or a missing one, is refused."""
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(v)
            continue
        if v is None:
            raise ValueError(f"keys[{column!r}] holds None: a missing value is not a key")
        if t is None:
            out.append(str(v))
            continue
        vt = _value_type(t)
        if isinstance(v, bool) != pa.types.is_boolean(vt):
            raise ValueError(
                f"keys[{column!r}] = {v!r}: not a value of the column's type {vt} "
                "(give a value of that type, or the key's text as a str)"
            )
        try:
            array = pa.array([v], type=vt)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError,
                ValueError, OverflowError):
            array = None
        if array is None or array.null_count:
            raise ValueError(
                f"keys[{column!r}] = {v!r}: not a value of the column's type {vt} "
                "(give a value of that type, or the key's text as a str)"
            )
        out.append(_texts(array, column)[0])
    return out


def release_table(columns: Sequence[Tuple[str, str, list]], kind: str) -> Any:
    """The released columns (``(name, type, values)``, the type ``"text"``,
    ``"int"`` (a count) or ``"float"``) as a table of the input's kind: pandas for
    pandas, Polars for Polars, else a :class:`pyarrow.Table`."""
    types = {"text": pa.string(), "int": pa.int64(), "float": pa.float64()}
    arrays = [pa.array(values, types[t]) for _n, t, values in columns]
    result = pa.Table.from_arrays(arrays, names=[n for n, _t, _v in columns])
    return frame_of(result, kind)

def frame_of(table: pa.Table, kind: str) -> Any:
    """``table`` as a DataFrame of ``kind``: pandas, Polars, else the table."""
    if kind == PANDAS:
        return table.to_pandas()
    if kind == POLARS:
        import polars as pl

        return pl.from_arrow(table)
    return table
