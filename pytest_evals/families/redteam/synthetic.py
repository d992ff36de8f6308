"""Deterministic synthetic runs in the seed's layout, for tests, benchmarks and demos.

The scores are random numbers, not model output: use this to try the viewer or to
measure it, never as evidence about a model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_evals.families.redteam.convert import attack_to_dict, hash_system_prompt, scored_attack
from pytest_evals.families.redteam.store import (
    atomic_write_json,
    build_stats,
    save_cluster_info,
    save_population_state,
)

OPERATIONS = ("init", "mutate", "crossover", "rewrite")


@dataclass
class SyntheticSpec:
    prompts: int = 20
    attacks: int = 5
    responses: int = 4
    seeds: int = 2
    raters: tuple[tuple[str, str], ...] = (("rm-small", "classifier"), ("judge-model", "lm_judge"))
    steps: int = 5
    #: Every ``na_every``-th attack lacks a normalized score on its second rater (N/A).
    na_every: int = 0
    population: bool = True
    random_seed: int = 0


def _rating(rng: random.Random, name: str, kind: str, normalized: bool) -> dict[str, Any]:
    raw = round(rng.uniform(0, 10), 3) if kind == "lm_judge" else round(rng.gauss(0.5, 0.3), 4)
    aux: dict[str, Any] = {}
    if normalized:
        aux["normalized_score"] = round(rng.gauss(0, 1), 4)
    if kind == "lm_judge":
        aux["reasoning"] = f"Synthetic reasoning {rng.randrange(10**6)}."
    return {"raw_score": raw, "rater": {"model_name": name, "rating_function_type": kind}, "aux_info": aux}


def write_synthetic_run(run_path: Path, spec: SyntheticSpec | None = None) -> list[list[str]]:
    """Write the run; returns the system prompts of each seed (in writing order)."""
    spec = spec or SyntheticSpec()
    rng = random.Random(spec.random_seed)
    per_seed: list[list[str]] = [[] for _ in range(spec.seeds)]
    attack_no = 0
    for i in range(spec.prompts):
        seed_id = i % spec.seeds
        step = (i // spec.seeds) % spec.steps
        system_prompt = f"System prompt {i}: respond in style {rng.randrange(10**6)}. " + "Be brief. " * rng.randrange(1, 6)
        attacks = []
        for j in range(spec.attacks):
            attack_no += 1
            missing = spec.na_every > 0 and attack_no % spec.na_every == 0
            responses = []
            for k in range(spec.responses):
                ratings = [
                    _rating(rng, name, kind, normalized=not (missing and r == 1))
                    for r, (name, kind) in enumerate(spec.raters)
                ]
                text = f"Response {k} to prompt {j} under system prompt {i}. " + "Detail. " * rng.randrange(1, 40)
                responses.append({"assistant": text, "ratings": ratings})
            attacks.append({"system": system_prompt, "user": f"User prompt {j} (seed {seed_id})", "responses": responses})
        meta = {"step": step, "operation": OPERATIONS[i % len(OPERATIONS)], "parent": None if step == 0 else f"p{i - 1}"}
        # What save_system_prompt_stats writes, without an fsync per file: fixtures need not survive a power cut.
        # Scored as rm-bias's runners write them (from dataclasses, adversarial_score included).
        data = build_stats(system_prompt, [attack_to_dict(scored_attack(a)) for a in attacks], meta)
        atomic_write_json(Path(run_path) / f"seed_{seed_id}" / f"{hash_system_prompt(system_prompt)}.json", data, durable=False)
        per_seed[seed_id].append(system_prompt)
    for seed_id, prompts in enumerate(per_seed):
        save_cluster_info(run_path, seed_id, f"Synthetic cluster {seed_id}", len(prompts), [f"train prompt {n}" for n in range(3)])
        if spec.population:
            for step in range(spec.steps):
                members = prompts[: max(1, (step + 1) * len(prompts) // spec.steps)]
                save_population_state(run_path, seed_id, step, {p: step for p in members})
    return per_seed
