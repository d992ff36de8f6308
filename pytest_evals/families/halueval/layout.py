"""Where the official files live in a data directory, and how to fetch them.

The layout is the official repository's ``data/`` folder as it is: JSON Lines files
with a ``.json`` name, the original general file in ``general_data_v2023-05-26/``, and
the official instruction files (``evaluation/<task>/...``) under ``prompts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pytest_evals.model.errors import CaseInputError

GeneralVersion = Literal["current", "v2023-05-26"]

#: Official repository and the commit whose files were verified (see docs/halueval.md).
OFFICIAL_REPO = "RUCAIBox/HaluEval"
OFFICIAL_COMMIT = "b7253db3cdaa0ab2c382f92b26b390109174f77e"

#: local path (relative to data_dir) -> path in the official repository
OFFICIAL_FILES: dict[str, str] = {
    "qa_data.json": "data/qa_data.json",
    "dialogue_data.json": "data/dialogue_data.json",
    "summarization_data.json": "data/summarization_data.json",
    "general_data.json": "data/general_data.json",
    "prompts/qa_evaluation_instruction.txt": "evaluation/qa/qa_evaluation_instruction.txt",
    "prompts/dialogue_evaluation_instruction.txt": "evaluation/dialogue/dialogue_evaluation_instruction.txt",
    "prompts/summarization_evaluation_instruction.txt": "evaluation/summarization/summarization_evaluation_instruction.txt",
}

#: The original 5,000-record general file, deleted from the official tree later; it is
#: fetched from the commit that first released it.
GENERAL_V1_COMMIT = "9405f05"
GENERAL_V1_LOCAL = "general_data_v2023-05-26/general_data.json"

#: sha256 of the official files at OFFICIAL_COMMIT (and the original general file).
SHA256: dict[str, str] = {
    "qa_data.json": "89ed139ec5e3a3169a0b30e45569ac1283846f76f27f7bb5e908ee6deed57e88",
    "dialogue_data.json": "9c461df2691e4362837f66fceaaff3bc260453350c3a1cae76a5a52e5e338bfd",
    "summarization_data.json": "86d2561eeb4271eb50b6bd90c9fd38636d30eaf4e98b648045f221adb1c2c758",
    "general_data.json": "73302cd97666b808fb94b5d8a4a2c924049c9484e609017a2f808c4a6d539219",
    GENERAL_V1_LOCAL: "06325213d8b9eb34fffed910516a18ba2103f1661457d4873a1f4808dffc6bf1",
}

HOW_TO_GET_DATA = (
    "get the official files with `pytest-evals halueval download --dest {dest}` "
    "(needs network access to raw.githubusercontent.com), or set the suite's "
    "`data_dir` to a copy of the official repository's data/ folder, or use "
    "`hf_dataset: pminervini/HaluEval`"
)


def data_file(data_dir: Path, task: str, general_version: GeneralVersion = "current") -> Path:
    if task == "general" and general_version == "v2023-05-26":
        return data_dir / GENERAL_V1_LOCAL
    return data_dir / f"{task}_data.json"


def require_file(path: Path, data_dir: Path) -> Path:
    """The file, or a CaseInputError that says how to get the data."""
    if path.is_file():
        return path
    if not data_dir.exists():
        problem = f"HaluEval data directory {data_dir} does not exist"
    else:
        problem = f"HaluEval data file {path} not found"
    raise CaseInputError(f"{problem}; {HOW_TO_GET_DATA.format(dest=data_dir)}")


def prompt_file(data_dir: Path, task: str) -> Path:
    return data_dir / "prompts" / f"{task}_evaluation_instruction.txt"
