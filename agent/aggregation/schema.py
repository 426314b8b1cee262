"""The Spark schema of a snapshot, derived from the dataclasses in ``agent.model.snapshot``.

Deriving it (instead of writing it twice) keeps the job and the agent on one
contract: a field added to the model is parsed by the job the moment it
exists. Missing fields parse as null (an older agent), unknown ones are
ignored (a newer agent), and a value of the wrong kind anywhere sets the
corrupt-record column, which ``parse`` quarantines.
"""

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Union, get_args, get_origin

from pyspark.sql import types as T

from agent.model.snapshot import Snapshot

CORRUPT_COLUMN = "_corrupt_record"


def spark_type(kind: Any) -> T.DataType:  # noqa: ANN401 - a type annotation of any kind
    """The Spark type of one model annotation (None-able annotations become nullable)."""
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        (non_null,) = (option for option in get_args(kind) if option is not type(None))
        return spark_type(non_null)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = typing.get_type_hints(kind)
        return T.StructType(
            [T.StructField(f.name, spark_type(hints[f.name])) for f in dataclasses.fields(kind)]
        )
    if origin is tuple:
        (item, _ellipsis) = get_args(kind)
        return T.ArrayType(spark_type(item))
    simple: dict[object, T.DataType] = {
        str: T.StringType(),
        int: T.LongType(),
        float: T.DoubleType(),
        bool: T.BooleanType(),
    }
    if kind in simple:
        return simple[kind]
    raise TypeError(f"no Spark type for model annotation {kind!r}")


@cache
def snapshot_schema() -> T.StructType:
    schema = spark_type(Snapshot)
    assert isinstance(schema, T.StructType)  # noqa: S101 - Snapshot is a dataclass
    return schema


@cache
def snapshot_parse_schema() -> T.StructType:
    """The snapshot schema plus the column ``from_json`` fills with a record that does not fit."""
    return T.StructType([*snapshot_schema().fields, T.StructField(CORRUPT_COLUMN, T.StringType())])
