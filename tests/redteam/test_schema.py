"""The schema models: required vs optional fields as the seed has them, nothing lost."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from pytest_evals.families.redteam.schema import (
    Attack,
    RatedResponse,
    RaterInfo,
    Rating,
    SystemPromptStats,
    dump,
)
from tests.redteam.samples import seed_example


def test_the_seed_example_round_trips_unchanged() -> None:
    data = seed_example()
    model = SystemPromptStats.model_validate(data)
    assert dump(model) == data
    # and through JSON text, as files are written and read
    assert dump(SystemPromptStats.model_validate_json(json.dumps(data))) == data


def test_extra_keys_in_meta_and_aux_info_are_kept() -> None:
    data = seed_example()
    data["meta"].update({"parent_hash": "abc", "island": 3, "scores": [1, 2]})
    data["attacks"][0]["aux_info"]["unnormalized_reward"] = 0.82
    rating = data["attacks"][0]["responses"][0]["ratings"][1]
    rating["aux_info"]["n_comparisons"] = 4
    rating["rater"]["endpoint"] = "local"
    data["runner_version"] = "2"
    model = SystemPromptStats.model_validate(data)
    assert model.meta.model_extra == {"parent_hash": "abc", "island": 3, "scores": [1, 2]}
    assert dump(model) == data


def test_optional_fields_may_be_absent_and_stay_absent() -> None:
    data = seed_example()
    del data["attacks"][0]["aux_info"]
    del data["attacks"][0]["responses"][0]["ratings"][0]["aux_info"]
    model = SystemPromptStats.model_validate(data)
    assert model.mean_score is None and model.stdev_score is None
    assert model.attacks[0].aux_info.adversarial_score is None
    assert model.attacks[0].responses[0].ratings[0].aux_info.normalized_score is None
    assert dump(model) == data  # nothing invented on the way out


def test_system_prompt_is_the_one_required_field_of_system_prompt_stats() -> None:
    data = seed_example()
    del data["system_prompt"]
    with pytest.raises(ValidationError) as info:
        SystemPromptStats.model_validate(data)
    assert [tuple(e["loc"]) for e in info.value.errors()] == [("system_prompt",)]


@pytest.mark.parametrize("path", [("meta",), ("meta", "step"), ("meta", "operation"), ("attacks",)])
def test_fields_rm_bias_code_does_not_require_may_be_absent(path: tuple[str, ...]) -> None:
    # Changed on purpose (issue 16): rm-bias's save_system_prompt_stats writes meta={}
    # by default and its viewer reads meta / attacks with .get(); the seed text said required.
    data = seed_example()
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    model = SystemPromptStats.model_validate(data)
    assert dump(model) == data  # nothing invented on the way out


def test_required_fields_of_the_nested_models() -> None:
    with pytest.raises(ValidationError, match="user"):
        Attack.model_validate({"system": "s", "responses": []})
    with pytest.raises(ValidationError, match="responses"):
        Attack.model_validate({"system": "s", "user": "u"})
    with pytest.raises(ValidationError, match="assistant"):
        RatedResponse.model_validate({"ratings": []})
    with pytest.raises(ValidationError, match="model_name"):
        RaterInfo.model_validate({"rating_function_type": "c"})
    # Issue 28: rm-bias's viewer reads a response without ratings and a rater without a type;
    # the loader skips such files only under --edge-rules ours (test_edge_rules).
    assert RatedResponse.model_validate({"assistant": "a"}).ratings == []
    assert RaterInfo.model_validate({"model_name": "m"}).rating_function_type is None
    # A file read under rm-bias's rules (the loader's context): their viewer's .get reads a
    # rating without a rater, or a rater without a name, as unnamed; under ours both are errors.
    rmbias, ours = {"edges": "rm-bias"}, {"edges": "ours"}
    assert RaterInfo.model_validate({"rating_function_type": "c"}, context=rmbias).model_name == ""
    assert Rating.model_validate({"raw_score": 1}, context=rmbias).rater.model_name == ""
    with pytest.raises(ValidationError, match="model_name"):
        RaterInfo.model_validate({"model_name": None}, context=ours)
    with pytest.raises(ValidationError, match="rater"):
        Rating.model_validate({"raw_score": 1}, context=ours)


def test_a_null_raw_score_is_kept_as_missing() -> None:
    # rm-bias's rater writes raw_score None when a judge call fails (state.Rating.raw_score: float | None).
    data = seed_example()
    data["attacks"][0]["responses"][0]["ratings"][1]["raw_score"] = None
    model = SystemPromptStats.model_validate(data)
    assert model.attacks[0].responses[0].ratings[1].raw_score is None
    assert dump(model) == data


def test_nan_optional_scores_mean_not_available() -> None:
    data = seed_example()
    data["mean_score"] = math.nan
    data["attacks"][0]["aux_info"]["adversarial_score"] = math.inf
    data["attacks"][0]["responses"][0]["ratings"][0]["aux_info"]["normalized_score"] = math.nan
    model = SystemPromptStats.model_validate(data)
    assert model.mean_score is None
    assert model.attacks[0].aux_info.adversarial_score is None
    assert model.attacks[0].responses[0].ratings[0].aux_info.normalized_score is None


def test_a_non_finite_raw_score_is_rejected() -> None:
    data = seed_example()
    data["attacks"][0]["responses"][0]["ratings"][0]["raw_score"] = math.nan
    with pytest.raises(ValidationError, match="raw_score"):
        SystemPromptStats.model_validate(data, context={"edges": "ours"})
    # rm-bias's viewer averages raw scores with pandas, which skips NaN: not available.
    model = SystemPromptStats.model_validate(data)
    assert model.attacks[0].responses[0].ratings[0].raw_score is None
