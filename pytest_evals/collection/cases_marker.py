"""Python API: parametrize your own test function with the cases of a JSONL file.

    @pytest_evals.cases("data/questions.jsonl")
    def test_answer(case, llm):
        ...

One test per line, ids from the case's ``id`` field or ``line-N``. The case is loaded
and validated when the test sets up, so a bad line is one ERROR naming file and line,
and fixtures (``llm``, ``judge``, your own) work as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.case_ref import CaseRef
from pytest_evals.model.errors import CaseInputError

if TYPE_CHECKING:
    from pydantic import BaseModel

#: pydantic and the task layer load when a case is validated, not when a test module
#: using ``@pytest_evals.cases`` is imported.
MARKER = "evals_cases"


def cases(
    path: str | Path,
    *,
    model: type[BaseModel] | None = None,
    task: str | None = None,
    argname: str = "case",
    id_field: str = "id",
) -> pytest.MarkDecorator:
    """Parametrize the decorated test with one case per line of the JSONL file ``path``
    (relative to the test file). ``model`` (a pydantic model) or ``task`` (a task name,
    whose case model then validates each line) make ``case`` a validated object;
    without either it is the line's dict."""
    if model is not None and not _is_model_class(model):
        raise TypeError(f"pytest_evals.cases(model=...): expected a pydantic model class, got {model!r}")
    return pytest.mark.evals_cases(str(path), model=model, task=task, argname=argname, id_field=id_field)


def _is_model_class(model: object) -> bool:
    from pydantic import BaseModel

    return isinstance(model, type) and issubclass(model, BaseModel)


class _Pending:
    """The parameter value until setup loads it (keeps collection lazy)."""

    def __init__(self, ref: CaseRef, error: str | None = None) -> None:
        self.ref = ref
        self.error = error

    def __repr__(self) -> str:
        return f"<case {self.ref.case_id} from {self.ref.source}>"


def generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    from pytest_evals.collection.case_ids import unique_refs
    from pytest_evals.suites.jsonl_cases import jsonl_refs

    raw_path = Path(marker.args[0])
    path = raw_path if raw_path.is_absolute() else Path(metafunc.definition.path).parent / raw_path
    argname = marker.kwargs.get("argname", "case")
    try:
        refs = list(unique_refs(jsonl_refs(path, marker.kwargs.get("id_field", "id"))))
        values = [_Pending(r) for r in refs]
    except CaseInputError as exc:
        # A missing or empty file is one erroring test, not a collection error.
        ref = CaseRef(case_id="input-error", source=str(path))
        values = [_Pending(ref, str(exc))]
    metafunc.parametrize(argname, values, ids=[v.ref.case_id for v in values])


def load_param(item: pytest.Item) -> None:
    """Replace the pending parameter by the validated case (raises at setup on bad input)."""
    marker = item.get_closest_marker(MARKER)
    funcargs = getattr(item, "funcargs", None)
    if marker is None or funcargs is None:
        return
    argname = marker.kwargs.get("argname", "case")
    pending = funcargs.get(argname)
    if not isinstance(pending, _Pending):
        return
    if pending.error or pending.ref.error:
        raise CaseInputError(pending.error or pending.ref.error or "")
    from pytest_evals.suites.jsonl_cases import read_json_line

    data = read_json_line(pending.ref)
    model = marker.kwargs.get("model")
    task_name = marker.kwargs.get("task")
    value: Any = data
    from pytest_evals.tasks.task_contract import validate

    if model is not None:
        value = validate(model, data, pending.ref.source)
    elif task_name is not None:
        from pytest_evals.tasks import get_task_class

        case_model = get_task_class(task_name).case_model
        if case_model is not None:
            value = validate(case_model, data, pending.ref.source)
    elif not isinstance(data, dict):
        raise CaseInputError(f"{pending.ref.source}: a case must be a JSON object, got {type(data).__name__}")
    funcargs[argname] = value
