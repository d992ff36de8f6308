"""One redaction layer for every secret this process knows.

A secret is registered once (the API key, the password of a base URL's userinfo, the
value of a configured header after ``${VAR}`` expansion) and from then on every text
that leaves the process passes through :func:`redact`: test reports (terminal, JUnit,
HTML), result files, the JSON summary, log records and answers stored in the cache.
Besides the clear value the layer masks the forms it travels in: percent-encoded in
URLs (either case of hex digits, and a URL password as it was typed), escaped in a
JSON string or as HTML text, base64 in both alphabets, padded or not, alone or inside
a longer encoded text (``Bearer <key>``, the ``user:password`` pair of HTTP Basic
auth) at any byte alignment.

The registry is per process. xdist workers register the same secrets from the same
configuration, and since a worker redacts its reports before sending them, the
controller never receives a secret it does not know.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"
#: Shorter values would mask ordinary words; they are no protection as secrets anyway.
MIN_SECRET_LENGTH = 4

_lock = threading.Lock()
_forms: set[str] = set()
_pattern: re.Pattern[str] | None = None
_SURROGATES = "[\ud800-\udfff]"
#: The forms as a tuple, for the check every report makes (see :func:`needs_scrub`).
_form_list: tuple[str, ...] = ()
#: No form holds a character JSON escapes (see :func:`dirty`).
_forms_json_safe = True
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


_PERCENT_HEX = re.compile("%[0-9A-F]{2}")


def _base64_forms(raw: bytes) -> set[str]:
    """What base64 of ``raw`` looks like wherever it sits in a longer encoded text.

    Inside a longer blob (``Bearer <key>``, ``user:password``, a JSON document) the value
    starts at any of three byte alignments, and the characters that mix its first or
    last bits with its neighbours' differ with them. The characters made of the value's
    bits alone do not: that core, per alignment and alphabet, is in every encoding of a
    text holding the value, padded or not. The whole encoding of the value alone (with
    and without padding) is masked too, so nothing of it is left around the mask.
    """
    forms: set[str] = set()
    for shift in range(3):
        data = bytes(shift) + raw
        first = -(-8 * shift // 6)  # the first character without a neighbour's bits
        end = 8 * len(data) // 6  # past the last character made of whole value bits
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(data).decode("ascii")
            forms.add(text[first:end])
            if shift == 0:
                forms.update((text, text.rstrip("=")))
    return forms


def _encodings(value: str) -> set[str]:
    forms = {value}
    # Percent-encoded as URLs, forms and query strings carry it, in either case of hex.
    for encoded in {quote(value, safe=""), quote(value, safe=":@"), quote(value), quote_plus(value)}:
        forms.add(encoded)
        forms.add(_PERCENT_HEX.sub(lambda m: m.group(0).lower(), encoded))
    # As a JSON string holds it (a raw JSON document: a batch file before it is parsed),
    # and as HTML or XML text does (``&`` ``<`` ``"`` in a password).
    for ascii_only in (True, False):
        forms.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1])
    forms.update((html.escape(value), html.escape(value, quote=False)))
    forms |= _base64_forms(value.encode("utf-8", "surrogatepass"))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _detection_forms(forms: set[str]) -> tuple[str, ...]:
    """The forms that hold no other form: a text holding any form holds one of them, so
    the quick check (:func:`contains_secret`) need not look for the rest."""
    ordered = sorted(forms, key=len)
    kept: list[str] = []
    for form in ordered:
        if not any(shorter in form for shorter in kept):
            kept.append(form)
    return tuple(kept)


def register(value: str | None) -> None:
    """Mask ``value`` (and its encoded forms) in every text that leaves the process."""
    global _pattern, _form_list, _forms_json_safe
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    new = _encodings(value) - _forms
    if not new:
        return
    with _lock:
        _forms.update(new)
        # Longest first, so a secret that contains another is masked whole.
        ordered = sorted(_forms, key=len, reverse=True)
        alternatives = "|".join(re.escape(f) for f in ordered)
        _pattern = re.compile(alternatives)
        _form_list = _detection_forms(_forms)
        _forms_json_safe = not any(_JSON_ESCAPED.search(f) for f in _forms)


def register_userinfo(user: str, password: str) -> None:
    """A URL's ``user:password``: the password alone and the Basic pair are secrets."""
    register(password)
    if password:
        register(f"{user}:{password}")


def register_header_value(value: str) -> None:
    """A configured header: the whole value and the credential after its auth scheme."""
    register(value)
    scheme, _, credential = value.strip().partition(" ")
    if credential and scheme.lower() in ("bearer", "basic", "token", "apikey", "api-key"):
        register(credential.strip())
        if scheme.lower() == "basic":
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                pair = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
                register(pair)
                # The password alone, as a process that only got the header knows it.
                register(pair.partition(":")[2])


def register_headers(headers: Mapping[str, str]) -> Mapping[str, str]:
    """Register every value of a header mapping; returns it unchanged (for one-line use)."""
    for value in headers.values():
        register_header_value(str(value))
    return headers


def active() -> bool:
    return _pattern is not None


def redact(text: str) -> str:
    pattern = _pattern
    # ``in`` first: most texts hold no secret, and it is many times faster than the
    # regex scan (see needs_scrub).
    if pattern is None or not text or not contains_secret(text):
        return text
    return pattern.sub(MASK, text)


def contains_secret(text: str) -> bool:
    return any(form in text for form in _form_list)


_SURROGATE = re.compile(_SURROGATES)


def escape_surrogates(text: str) -> str:
    """Lone surrogates (from JSON ``"\\ud800"``) as ``\\ud800`` text: no UTF-8 encoder
    accepts them, and one of them used to end an HTML report in INTERNALERROR."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def scrub(text: str) -> str:
    """A text fit to leave the process: secrets masked, encodable as UTF-8."""
    return redact(escape_surrogates(text))


def _strings(value: Any, out: list[str]) -> None:
    """Every string inside ``value`` (dict keys too), depth first."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            # Strings are the common leaves: appended without a call.
            if type(key) is str:
                out.append(key)
            else:
                _strings(key, out)
            if type(item) is str:
                out.append(item)
            elif item is not None and not isinstance(item, (int, float)):
                _strings(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if type(item) is str:
                out.append(item)
            elif item is not None and not isinstance(item, (int, float)):
                _strings(item, out)


def dirty(value: Any) -> bool:
    """Whether any string inside ``value`` needs :func:`scrub`.

    The strings are joined and searched once: a case result holds dozens of short
    strings, and one regex pass over their concatenation costs a fraction of one per
    string (this runs on every report). Each string is a substring of the joined text,
    so nothing is missed; a match across a joint only costs a needless scrub.
    """
    if isinstance(value, str):
        return needs_scrub(value)
    if _forms_json_safe:
        # Faster still: the value as compact JSON, serialised in C. JSON escapes only
        # '"', '\\' and control characters; no form holds one, so a form inside any
        # string is also inside that string's escaped text. Lone surrogates, keys that
        # are not strings and values JSON cannot hold make orjson refuse: the walk below
        # answers those. A match outside the strings only costs a needless scrub.
        text = _json_text(value)
        if text is not None:
            return needs_scrub(text)
    parts: list[str] = []
    _strings(value, parts)
    return bool(parts) and needs_scrub("\x00".join(parts))


def _json_text(value: Any) -> str | None:
    import orjson

    # Dataclasses, dates and subclasses of str, int, dict, list are refused rather than
    # serialised: the walk sees no strings in them, and this check must see no more.
    option = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
    try:
        raw = orjson.dumps(value, option=option)
    except TypeError:  # orjson.JSONEncodeError too
        return None
    return raw.decode("utf-8")


def scrub_obj(value: Any) -> Any:
    """``value`` with every string inside it (keys too) scrubbed; other values kept.

    Nearly every value is clean: it is checked first and returned as it is, so the
    common case allocates nothing (this runs on every case report).
    """
    return _scrub_obj(value) if dirty(value) else value


def _scrub_obj(value: Any) -> Any:
    return _map_strings(value, scrub)


def redact_obj(value: Any) -> Any:
    """``value`` with secrets masked in every string inside it (keys too), and nothing
    else changed (lone surrogates stay): for data kept to be used again, like cached
    answers, which must read back as they were asked."""
    if _pattern is None:
        return value
    parts: list[str] = []
    _strings(value, parts)
    if not parts or not contains_secret("\x00".join(parts)):
        return value
    return _map_strings(value, redact)


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {_map_strings(k, fn): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_strings(v, fn) for v in value)
    return value


def needs_scrub(text: str) -> bool:
    """A lone surrogate or a secret form in ``text``.

    Not one regex: an alternation of literals is scanned character by character (155 us
    for a HaluEval case's 2.7 kB of strings, on every case report), while the encoder
    finds a surrogate and ``in`` finds each form at C speed (12 us for the same text).
    """
    if not text.isascii():
        try:
            text.encode("utf-8")  # fails on lone surrogates, and only on them
        except UnicodeEncodeError:
            return True
    return any(form in text for form in _form_list)


def clear() -> None:
    """Forget every secret (tests that run several configurations in one process)."""
    global _pattern, _form_list, _forms_json_safe
    with _lock:
        _forms.clear()
        _pattern = None
        _form_list = ()
        _forms_json_safe = True


_factory_installed = False


def install_log_redaction() -> None:
    """Mask secrets in every log record at creation, whichever logger or handler gets it.

    A filter on one logger misses its children's records and third-party loggers
    (aiohttp, openai) that may quote a request; the record factory sees them all.
    """
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
        previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _pattern is not None:
            try:
                message = record.getMessage()
            except Exception:  # a broken format string is the handler's problem, not ours
                return record
            cleaned = redact(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return record

    logging.setLogRecordFactory(factory)
