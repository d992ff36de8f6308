"""The data the viewer embeds: loaded runs flattened into compact JSON.

All numbers the viewer shows are computed here, in Python, by the same functions the
helpers and the red-team task use, so the page only formats and sorts them. Keys are
short because a run with 20,000 responses repeats them 20,000 times:

payload:  v, generated, source, partial ("average" | "na"), edges {mode: "rm-bias" | "ours", rules:
          [{key, rmbias, ours, reason}]}, watch (seconds between polls) | null, runs
run:      id, runner, name, path, raters [{name, type}], issues [{file, field, message}],
          warnings [{file, message}] (loaded but suspicious, e.g. a name that is not the hash),
          nullRaw (ratings whose raw_score is null), seeds, attrs (final_stats, see below)
attrs:    [{seed, file, items: [{attr, sw, tw (the file's student/teacher win rates), swc, twc
          (recomputed from the rollouts by rm-bias's rule), meta, prompts, n (rollouts), nulls
          (null rollouts), roll: [{u, rw, base, ss, ts, pm, sx, tx (score reasoning/raw)}]}]}]
seed:     id, cluster {summary, train_batch_size, sample_train_prompts} | null,
          population {step: {hash: generation}} | null, prompts
prompt:   h (hash), file, sp (system prompt), step | null, op | null, meta (other meta keys),
          mean, std (computed from the attacks, as rm-bias's viewer does), fmean, fstd (the
          file's mean_score / stdev_score), fsort (rm-bias's Explore order key: fmean, 0 when
          the file has no mean_score), hashOk (file name == md5 of the prompt), attacks
attack:   sys (its system prompt when it differs from sp, else null), u (user prompt),
          adv, advSrc ("file" | "computed" | null), advWhy (why adv is N/A), advNote (scores
          averaged over fewer responses), stored (the file's adversarial_score), aux (other
          aux_info keys), mr / mn (per run rater: mean raw / mean normalized score of the
          values present, null when none), resp
response: a (assistant text), len (characters), raw / norm / why (per run rater: the rating
          the edge rules pick when a rater rated twice), x (other rating aux_info keys per
          rater, only when present), twice (names of raters that rated it more than once)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from pytest_evals.families.redteam.convert import hash_system_prompt
from pytest_evals.families.redteam.edge_rules import DEFAULT_EDGES, EdgeRules, rules_json
from pytest_evals.families.redteam.loader import PromptRecord, RunData, SeedData
from pytest_evals.families.redteam.schema import Attack, RatedResponse, Rating, dump
from pytest_evals.families.redteam.scoring import (
    DEFAULT_PARTIAL,
    PartialScores,
    missing_reason,
    partial_note,
    present_normalized,
    present_raw,
    shown_rating,
)

PAYLOAD_VERSION = 2


def _num(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None and math.isfinite(v)]
    return sum(defined) / len(defined) if defined else None


def run_raters(run: RunData) -> list[dict[str, str | None]]:
    """Rater model names (with their first-given type) in order of first appearance; empty names left out."""
    seen: dict[str, str | None] = {}
    for seed in run.seeds:
        for record in seed.prompts:
            for attack in record.stats.attacks:
                for response in attack.responses:
                    for rating in response.ratings:
                        name = rating.rater.model_name
                        # rm-bias's viewer makes no column for an empty name (``if model_name``).
                        if name and seen.get(name) is None:
                            seen[name] = rating.rater.rating_function_type
    return [{"name": n, "type": t} for n, t in seen.items()]


def response_values(response: RatedResponse, names: Sequence[str], edges: EdgeRules = DEFAULT_EDGES) -> dict[str, Any]:
    raw: list[float | None] = []
    norm: list[float | None] = []
    why: list[str | None] = []
    extra: dict[str, Any] = {}
    picked: dict[str, Rating] = {}
    counts: dict[str, int] = {}
    for given in response.ratings:
        counts[given.rater.model_name] = counts.get(given.rater.model_name, 0) + 1
    for name in counts:
        rating = shown_rating(response, name, edges)
        if rating is not None:
            picked[name] = rating
    for i, name in enumerate(names):
        rating = picked.get(name)
        raw.append(_num(rating.raw_score) if rating else None)
        norm.append(_num(rating.aux_info.normalized_score) if rating else None)
        why.append(rating.aux_info.reasoning if rating else None)
        if rating is not None:
            other = {k: v for k, v in dump(rating.aux_info).items() if k not in ("normalized_score", "reasoning")}
            if other:
                extra[str(i)] = other
    out: dict[str, Any] = {"a": response.assistant, "len": len(response.assistant), "raw": raw, "norm": norm}
    if any(w is not None for w in why):
        out["why"] = why
    if extra:
        out["x"] = extra
    twice = [n for n, c in counts.items() if c > 1]
    if twice:
        out["twice"] = twice
    return out


def adv_reason(attack: Attack, partial: PartialScores, edges: EdgeRules, computed: bool) -> str | None:
    """Why an attack's score is N/A or stored; None when it was computed."""
    if computed:
        return None
    why = missing_reason(attack, partial)
    stored = _num(attack.aux_info.adversarial_score)
    if not attack.responses and stored is not None:
        if edges == "ours":
            return f"{why}; the file's stored score is shown (edge rules 'ours')"
        return (f"{why}; the file's stored aux_info.adversarial_score {stored:.6g} is not used, as rm-bias's "
                "viewer computes scores only from ratings (--edge-rules ours shows it)")
    return why


def attack_values(
    attack: Attack,
    record_prompt: str,
    adv: float | None,
    names: Sequence[str],
    partial: PartialScores,
    computed: bool,
    edges: EdgeRules = DEFAULT_EDGES,
) -> dict[str, Any]:
    responses = [response_values(r, names, edges) for r in attack.responses]
    # partial_note walks the ratings again: only worth it when some normalized score is missing.
    gaps = any(v is None for r in responses for v in r["norm"])
    aux = {k: v for k, v in dump(attack.aux_info).items() if k != "adversarial_score"}
    return {
        "sys": None if attack.system == record_prompt else attack.system,
        "u": attack.user,
        "adv": _num(adv),
        "advSrc": None if adv is None else ("computed" if computed else "file"),
        "advWhy": adv_reason(attack, partial, edges, computed),
        "advNote": partial_note(attack) if computed and gaps and partial == "average" else None,
        "stored": _num(attack.aux_info.adversarial_score),
        "aux": aux,
        # rm-bias's columns: every value the rater gave on the attack, null ones left out.
        "mr": [_mean(list(present_raw(attack, n))) for n in names],
        "mn": [_mean(list(present_normalized(attack, n))) for n in names],
        "resp": responses,
    }


def prompt_values(record: PromptRecord, run_path: Any, names: Sequence[str]) -> dict[str, Any]:
    stats = record.stats
    meta = {k: v for k, v in dump(stats.meta).items() if k not in ("step", "operation")}
    try:
        file = str(record.path.relative_to(run_path))
    except ValueError:
        file = str(record.path)
    return {
        "h": record.hash,
        "file": file,
        "sp": stats.system_prompt,
        "step": stats.meta.step,
        "op": stats.meta.operation,
        "meta": meta,
        "mean": _num(record.mean_score),
        "std": _num(record.stdev_score),
        "fmean": _num(record.file_mean),
        "fstd": _num(record.file_stdev),
        "fsort": _num(record.sort_score),
        "hashOk": record.hash_ok,
        "attacks": [
            attack_values(a, stats.system_prompt, adv, names, record.partial, computed, record.edges)
            for a, adv, computed in zip(stats.attacks, record.adversarial_scores, record.computed, strict=True)
        ],
    }


def seed_values(seed: SeedData, run: RunData, names: Sequence[str]) -> dict[str, Any]:
    return {
        "id": seed.seed_id,
        "cluster": dump(seed.cluster_info) if seed.cluster_info is not None else None,
        "population": seed.population_history,
        "prompts": [prompt_values(p, run.path, names) for p in seed.prompts],
    }


def run_warnings(run: RunData) -> list[dict[str, str]]:
    """Files that loaded but look wrong: a name that is not the md5 of the prompt."""
    out = []
    for seed in run.seeds:
        for record in seed.prompts:
            if not record.hash_ok:
                expected = hash_system_prompt(record.stats.system_prompt)
                out.append({"file": str(record.path), "message": f"file name is not its system prompt's hash (expected {expected}.json)"})
    return out


def null_raw_count(run: RunData) -> int:
    return sum(
        1
        for seed in run.seeds
        for record in seed.prompts
        for attack in record.stats.attacks
        for response in attack.responses
        for rating in response.ratings
        if rating.raw_score is None
    )


def finite_json(value: Any) -> Any:
    """JSON data with NaN/Infinity (which Python's json writes) as null, for a strict page."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value


def _score_part(score: Any) -> tuple[float | None, dict[str, Any] | None]:
    if not isinstance(score, dict):
        return None, None
    value = score.get("score")
    other = {k: v for k, v in score.items() if k != "score"}
    return (_num(float(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None), finite_json(other) or None


def attribute_values(run: RunData) -> list[dict[str, Any]]:
    out = []
    for seed in run.attribute_stats:
        items = []
        for rec in seed.attributes:
            roll = []
            nulls = 0
            for user, rollouts in rec.rollouts.items():
                for r in rollouts:
                    if r is None:
                        nulls += 1
                        continue
                    ss, sx = _score_part(r.get("student_score"))
                    ts, tx = _score_part(r.get("teacher_score"))
                    roll.append({"u": user, "rw": str(r.get("rewritten_response", "")), "base": str(r.get("baseline_response", "")),
                                 "ss": ss, "ts": ts, "sx": sx, "tx": tx, "pm": finite_json(r.get("policy_model"))})
            items.append({
                "attr": rec.attribute, "sw": _num(rec.student_winrate), "tw": _num(rec.teacher_winrate),
                "swc": _num(rec.student_computed), "twc": _num(rec.teacher_computed), "meta": finite_json(rec.meta),
                "prompts": len(rec.rollouts), "n": len(roll), "nulls": nulls, "roll": roll,
            })
        try:
            file = str(seed.path.relative_to(run.path))
        except ValueError:
            file = str(seed.path)
        out.append({"seed": seed.seed_id, "file": file, "items": items})
    return out


def run_values(run: RunData) -> dict[str, Any]:
    raters = run_raters(run)
    names = [str(r["name"]) for r in raters]
    return {
        "id": run.run_id,
        "runner": run.runner,
        "name": run.name,
        "path": str(run.path),
        "raters": raters,
        "issues": [i.to_json() for i in run.issues],
        "warnings": run_warnings(run),
        "nullRaw": null_raw_count(run),
        "seeds": [seed_values(s, run, names) for s in run.seeds],
        "attrs": attribute_values(run),
    }


def build_payload(
    runs: Sequence[RunData],
    source: str = "",
    partial: PartialScores = DEFAULT_PARTIAL,
    watch: float | None = None,
    edges: EdgeRules = DEFAULT_EDGES,
) -> dict[str, Any]:
    return {
        "v": PAYLOAD_VERSION,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "source": source,
        "partial": partial,
        "edges": rules_json(edges),
        "watch": watch,
        "runs": [run_values(r) for r in runs],
    }
