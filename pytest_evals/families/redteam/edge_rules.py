"""The two rule sets for the five places where rm-bias's viewer and our first reading differ.

``"rm-bias"`` (the default) is what rm-bias's own viewer (``viz_runs.py`` at a59ee4a)
shows for a file; ``"ours"`` is the stricter reading pytest_evals had before, kept behind
``--edge-rules ours`` (``edges="ours"`` in the loaders) for the reasons in :data:`RULES`.

1. ``no-responses``: an attack without responses is N/A under rm-bias's rules, even with a
   stored ``aux_info.adversarial_score`` (their viewer only computes from the ratings);
   ours shows the stored score.
2. ``same-rater-twice``: a response rated twice by one rater shows the *last* rating in
   the response table under rm-bias's rules (their per-response lookup overwrites), the
   first under ours. Means over an attack count both ratings either way, as theirs do.
3. ``sort``: the system prompt table starts sorted by the file's ``mean_score``
   (a missing one counts as 0), highest first, under rm-bias's rules; by the mean
   computed from the attacks under ours.
4. ``lenient-fields``: a rater without ``rating_function_type`` and a response without
   ``ratings`` are read (as an unknown type / no ratings) under rm-bias's rules, and so
   are a rating without ``rater`` and a rater without ``model_name`` (an unnamed rater:
   no column, no default pair, as their ``.get`` reads them); ours skips the file with an
   issue naming the field.
5. ``string-scores``: a score written as text (``"0.5"``) is ignored under rm-bias's rules
   (their viewer only takes JSON numbers; ``true``/``false`` count as 1/0 there, being
   Python ints); ours reads the number in the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

EdgeRules = Literal["rm-bias", "ours"]
EDGE_RULES: tuple[EdgeRules, ...] = ("rm-bias", "ours")
DEFAULT_EDGES: EdgeRules = "rm-bias"

#: Key under which the loader passes the rule set to the schema's validators.
CONTEXT_KEY = "edges"


@dataclass(frozen=True)
class EdgeRule:
    key: str
    rmbias: str
    ours: str
    #: Why one might want ours instead.
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "rmbias": self.rmbias, "ours": self.ours, "reason": self.reason}


RULES: tuple[EdgeRule, ...] = (
    EdgeRule(
        "no-responses",
        "an attack without responses is N/A, even with a stored adversarial_score",
        "an attack without responses shows its stored aux_info.adversarial_score",
        "the writer computed that score while it still had the responses; a file whose responses "
        "were stripped to save space keeps its scores",
    ),
    EdgeRule(
        "same-rater-twice",
        "a response rated twice by one rater shows the last rating",
        "a response rated twice by one rater shows the first rating",
        "the first rating is the one the default rater pair is taken from",
    ),
    EdgeRule(
        "sort",
        "system prompts are listed by the file's mean_score (missing counts as 0), highest first",
        "system prompts are listed by the mean computed from their attacks, highest first",
        "the file's mean_score is 0.0 for a prompt without any score and may be stale; the computed mean "
        "is the one shown",
    ),
    EdgeRule(
        "lenient-fields",
        "a rater without rating_function_type and a response without ratings are read (a rating without "
        "a rater or model_name counts as an unnamed rater: no column, no default pair)",
        "a file with a rater without rating_function_type or model_name, a rating without a rater or a "
        "response without ratings is skipped, with the field named",
        "the seed's schema requires both fields; a writer that leaves them out may have lost more",
    ),
    EdgeRule(
        "string-scores",
        'a score written as text ("0.5") is ignored (true/false count as 1/0)',
        'a score written as text ("0.5") is read as the number',
        "a number written as text is still the rater's number",
    ),
)


def rules_json(edges: EdgeRules) -> dict[str, Any]:
    """What the viewer shows about the rule set in force."""
    return {"mode": edges, "rules": [r.to_json() for r in RULES]}


def edges_of(context: Any) -> EdgeRules:
    """The rule set named in a pydantic validation context (rm-bias's without one)."""
    if isinstance(context, dict) and context.get(CONTEXT_KEY) == "ours":
        return "ours"
    return DEFAULT_EDGES

