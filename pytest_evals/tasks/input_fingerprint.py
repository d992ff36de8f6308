"""A case's input fingerprint: a short hash of the fields the system under test is given
and judged against, never of its outputs.

A regression baseline pairs cases by id; ids alone do not say the case is the same (a
``line-N`` id names a position, a relabelled data set keeps its ids). Each result
carries the fingerprint of its input, and pairing checks that both runs saw equal
inputs. The hash is over canonical JSON (sorted keys, no spaces), so the order of a
record's keys and its formatting do not matter; 16 hex digits (64 bits) keep the
chance that two different inputs share one far below one in a billion per suite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from typing import Any

from pytest_evals.model.canonical_json import canonical_json

#: Hex digits kept of the SHA-256.
DIGITS = 16


def fingerprint(value: Any) -> str:
    """The hash of ``value`` as canonical JSON (values JSON cannot hold as their text)."""
    return hashlib.sha256(canonical_json(value)).hexdigest()[:DIGITS]


def input_part(record: Any, input_fields: Collection[str] | None, output_fields: Collection[str]) -> Any:
    """What of ``record`` is input: the ``input_fields`` when a task names them (absent
    ones left out, so an optional field that is missing and one that is null differ),
    else everything but the ``output_fields``. A record that is not an object is input
    as a whole."""
    if not isinstance(record, Mapping):
        return record
    if input_fields is not None:
        return {k: record[k] for k in input_fields if k in record}
    return {k: v for k, v in record.items() if k not in output_fields}
