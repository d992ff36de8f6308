"""Finding WordNet for METEOR without downloading anything.

Sources, in order: an explicit directory, NLTK's data (``nltk.download('wordnet')``),
then the WordNet 3.0 database Debian/Ubuntu install with ``apt-get install
wordnet-base`` (``/usr/share/wordnet``). That database is the one NLTK packages, minus
the ``lexnames`` file, which only names the lexicographer files; METEOR never reads those
names, so placeholder names are supplied for it.
"""

from __future__ import annotations

import io
import threading
import warnings
from pathlib import Path
from typing import Any

from pytest_evals.metrics.reference.reference_metric import MetricError

SYSTEM_WORDNET = Path("/usr/share/wordnet")
#: WordNet 3.0 has 45 lexicographer files, numbered 00-44.
_LEXFILE_COUNT = 45

HOW_TO_GET = (
    "METEOR needs WordNet data and this run does not download anything. Install it once "
    "with `python -m nltk.downloader wordnet` (or set NLTK_DATA to a directory holding "
    "corpora/wordnet), or on Debian/Ubuntu `apt-get install wordnet-base`, or point the "
    "metric's `wordnet_path` parameter at a WordNet 3.0 dict directory"
)

_READERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _is_wordnet_dir(path: Path) -> bool:
    return (path / "data.noun").is_file() and (path / "index.noun").is_file()


def _reader_for_directory(path: Path) -> Any:
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class DictDirectoryReader(WordNetCorpusReader):
        """A reader for a bare WordNet dict directory (no lexnames file)."""

        def open(self, fileid: str) -> Any:
            if fileid == "lexnames" and not (path / "lexnames").is_file():
                names = "".join(f"{i:02d}\tlexfile.{i:02d}\t0\n" for i in range(_LEXFILE_COUNT))
                return io.StringIO(names)
            return super().open(fileid)

        def map_wn(self, version: str = "wordnet") -> Any:
            # NLTK maps other WordNet versions onto its own "wordnet" corpus (3.0); this
            # database is 3.0 itself, so there is nothing to map (and no corpus to map to).
            return None

    # NLTK only reads corpora under the roots of its data path (its path sandbox).
    if str(path) not in nltk.data.path:
        nltk.data.path.append(str(path))
    with warnings.catch_warnings():
        # "multilingual functions are not available": METEOR is English-only here.
        warnings.simplefilter("ignore", UserWarning)
        return DictDirectoryReader(str(path), None)


def _nltk_wordnet() -> Any | None:
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        try:
            nltk.data.find("corpora/wordnet.zip")
        except LookupError:
            return None
    from nltk.corpus import wordnet

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        wordnet.ensure_loaded()
    return wordnet


def load_wordnet(explicit: str | None = None) -> Any:
    """A WordNet reader for METEOR, or a MetricError saying how to get the data."""
    key = explicit or ""
    with _LOCK:
        if key in _READERS:
            return _READERS[key]
        reader: Any | None = None
        if explicit:
            path = Path(explicit).expanduser()
            if not _is_wordnet_dir(path):
                raise MetricError(f"wordnet_path {explicit!r} is not a WordNet dict directory "
                                  f"(no data.noun/index.noun there). {HOW_TO_GET}")
            reader = _reader_for_directory(path)
        else:
            reader = _nltk_wordnet()
            if reader is None and _is_wordnet_dir(SYSTEM_WORDNET):
                reader = _reader_for_directory(SYSTEM_WORDNET)
        if reader is None:
            raise MetricError(HOW_TO_GET)
        _READERS[key] = reader
        return reader
