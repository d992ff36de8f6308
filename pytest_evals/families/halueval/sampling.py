"""Seeded, order-free randomness: the stratified sample and the right/hallucinated choice.

Both are functions of (seed, case id) through a hash, never draws from a shared random
stream. So the answer shown for an item is the same whether it runs alone, in a
sample, in any order, or on any xdist worker, and every worker collects the same
sample.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

_SCALE = float(1 << 64)
_BIG_ENDIAN_U64 = struct.Struct(">Q")


def unit_hash(*parts: object) -> float:
    """A uniform number in [0, 1) determined by ``parts`` (stable across processes)."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") / _SCALE


def shows_hallucinated(case_id: str, seed: int) -> bool:
    """Whether the judge is shown the hallucinated output of a pair (probability 1/2)."""
    return unit_hash("halueval-choice", seed, case_id) < 0.5


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Split a total sample size over strata proportionally (largest remainder).

    Ties in the fractional parts go to the stratum listed first, so the split is a
    function of the inputs only.
    """
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    if n <= 0 or total == 0:
        return {k: 0 for k in sizes}
    exact = {k: n * v / total for k, v in sizes.items()}
    out = {k: int(q) for k, q in exact.items()}
    left = n - sum(out.values())
    order = sorted(sizes, key=lambda k: (-(exact[k] - out[k]), list(sizes).index(k)))
    for k in order:
        if left == 0:
            break
        if out[k] < sizes[k]:
            out[k] += 1
            left -= 1
    return out


def pick(ids: Sequence[str], k: int, seed: int, stratum: str) -> list[int]:
    """Indices of ``k`` of ``ids`` chosen by seeded hash, returned in their original order.

    Taking the smallest hashes makes samples nested: with the same seed a larger sample
    contains every item of a smaller one.
    """
    if k >= len(ids):
        return list(range(len(ids)))
    # unit_hash("halueval-sample", seed, stratum, id) for every id of the file, its
    # constant prefix encoded once (the same bytes, so the same sample).
    prefix = "\x1f".join(("halueval-sample", str(seed), str(stratum), "")).encode("utf-8")
    sha256 = hashlib.sha256
    # The digest's first 8 bytes as a big-endian integer, read in place (int.from_bytes
    # of a slice made a copy per id): a quarter of this loop over a 10,000-line file.
    first_8 = _BIG_ENDIAN_U64.unpack_from
    hashes = [
        first_8(sha256(prefix + str(case_id).encode("utf-8")).digest())[0] / _SCALE
        for case_id in ids
    ]
    ranked = sorted(range(len(ids)), key=hashes.__getitem__)
    return sorted(ranked[: max(k, 0)])


def stratified(
    strata: Mapping[str, Sequence[T]],
    ids: Mapping[str, Sequence[str]],
    sample: int | Mapping[str, int] | None,
    seed: int,
) -> dict[str, list[T]]:
    """Sample each stratum: a total (split proportionally) or per-stratum sizes.

    With a mapping, strata it does not name are kept whole.
    """
    if sample is None:
        return {k: list(v) for k, v in strata.items()}
    if isinstance(sample, Mapping):
        sizes = {k: min(int(sample[k]), len(v)) if k in sample else len(v) for k, v in strata.items()}
    else:
        sizes = allocate({k: len(v) for k, v in strata.items()}, int(sample))
    return {
        k: [v[i] for i in pick(ids[k], sizes[k], seed, k)]
        for k, v in strata.items()
    }
