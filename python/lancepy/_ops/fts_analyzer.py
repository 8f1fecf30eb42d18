"""The analyzer of INVERTED (full-text search) indices, as pylance 14 analyzes text: its
parameters (``params`` in an index's ``metadata.lance``) and their checks, the ``code``
analyzer profile, the base tokenizers (``jieba/<model>``'s dictionaries and ``lindera/<model>``'s
configuration found under the language-model home) and the native analyzer built from them.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._ops.stopwords import ICU_STOP_WORDS, STOP_WORDS, canonical_language
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


#: pylance 14's analyzer parameters, with its defaults (``params`` in ``metadata.lance``).
DEFAULT_PARAMS: Dict[str, Any] = {
    "lance_tokenizer": "text",
    "base_tokenizer": "simple",
    "language": "English",
    "with_position": False,
    "max_token_length": 40,
    "lower_case": True,
    "stem": True,
    "remove_stop_words": True,
    "custom_stop_words": None,
    "ascii_folding": True,
    "min_ngram_length": 3,
    "max_ngram_length": 3,
    "prefix_only": False,
    "block_size": 128,
    "split_identifiers": False,
    "split_on_numerics": False,
    "preserve_original": False,
    "index_operators": False,
}

#: The document tokenizers (pylance's ``lance_tokenizer``): plain text, or JSON documents.
LANCE_TOKENIZERS = ("text", "json")

#: The base tokenizers lancepy has (pylance's names).
_TOKENIZERS = ("simple", "whitespace", "raw", "icu", "icu/split", "code", "ngram")

#: The ``code`` tokenizer's flags, in the order the native analyzer takes them.
_CODE_FLAGS = ("index_operators", "split_identifiers", "preserve_original", "split_on_numerics")


@dataclass
class Analyzer:
    """How pylance splits a text into tokens (an index's ``params``)."""

    params: Dict[str, Any]

    def __post_init__(self) -> None:
        p = self.params
        if p.get("lance_tokenizer", "text") not in LANCE_TOKENIZERS + (None,):
            raise InvalidArgumentError(
                f"unknown lance tokenizer {p.get('lance_tokenizer')!r} (INVERTED index lance_tokenizer: 'text' or 'json')"
            )
        #: documents are JSON, flattened into ``<path>,<type>,<value>`` tokens, and queries
        #: are such triplets separated by ``;`` (pylance's ``lance_tokenizer="json"``)
        self.json = p.get("lance_tokenizer") == "json"
        self._model = _jieba_model(p.get("base_tokenizer")) or _lindera_model(p.get("base_tokenizer"))
        if p.get("base_tokenizer", "simple") not in _TOKENIZERS and self._model is None:
            raise NotSupportedError(
                f"INVERTED index base_tokenizer {p.get('base_tokenizer')!r}: lancepy has {', '.join(map(repr, _TOKENIZERS))},"
                " 'jieba/<model>' and 'lindera/<model>'"
            )
        self._ngram: Optional[Tuple[int, int, bool]] = None
        if p.get("base_tokenizer") == "ngram":
            lo, hi = int(p.get("min_ngram_length", 3)), int(p.get("max_ngram_length", 3))
            if lo < 1 or hi < lo:
                raise InvalidArgumentError(
                    f"ngram tokenizer: min_ngram_length ({lo}) must be at least 1 and at most max_ngram_length ({hi})"
                )
            self._ngram = (lo, hi, bool(p.get("prefix_only", False)))
        self._code: Optional[Tuple[bool, ...]] = None
        if p.get("base_tokenizer") == "code":
            self._code = tuple(bool(p.get(k)) for k in _CODE_FLAGS)
        elif any(p.get(k) for k in _CODE_FLAGS):
            raise InvalidArgumentError(
                f"INVERTED index options {', '.join(k for k in _CODE_FLAGS if p.get(k))} need base_tokenizer='code'"
            )
        language = canonical_language(p.get("language") or "English")
        self._language = language.lower() if p.get("stem") else None
        stop: Optional[List[str]] = None
        if p.get("remove_stop_words"):
            if p.get("custom_stop_words") is not None:
                stop = [str(w) for w in p["custom_stop_words"]]
            elif p.get("base_tokenizer") in ("icu", "icu/split"):
                stop = sorted(ICU_STOP_WORDS)
            else:
                stop = sorted(STOP_WORDS[language])
        self._stop = stop
        max_len = p.get("max_token_length")
        self._max_len = int(max_len) if max_len is not None else None
        self._native: Any = None  # (the native analyzer of query texts, built on first use)

    @property
    def with_position(self) -> bool:
        return bool(self.params.get("with_position"))

    def analyze(
        self, texts: Union[Sequence[Optional[str]], pa.Array], with_positions: bool = False
    ) -> Tuple[List[str], "np.ndarray", "np.ndarray", "np.ndarray"]:
        """``(vocabulary, token ids, per-text offsets, positions)`` of the documents `texts`
        (strs, or an Arrow string array; positions of one text, or of all with
        `with_positions`; else empty). A JSON index's documents must be JSON."""
        import numpy as np

        base, max_len, lower, language, stop, folding, ngram, code, model = self._native_args()
        vocab, ids, offsets, positions = _lancepy.fts_analyze(
            texts if isinstance(texts, pa.Array) else list(texts),  # (an Arrow array is read in place)
            base, max_len, lower, language, stop, folding, with_positions, ngram, code, model, json=self.json,
        )
        return (
            vocab,
            np.frombuffer(ids, dtype="<u4"),
            np.frombuffer(offsets, dtype="<u8").astype(np.int64),
            np.frombuffer(positions, dtype="<u4"),
        )

    def _native_args(self) -> Tuple[str, Optional[int], bool, Optional[str], Optional[List[str]], bool, Any, Any, Any]:
        """The native analyzer's arguments, but positions (see ``fts_analyze``)."""
        return (str(self.params.get("base_tokenizer") or "simple"), self._max_len, bool(self.params.get("lower_case", True)),
                self._language, self._stop, bool(self.params.get("ascii_folding", False)), self._ngram, self._code,
                self._model)

    def builder(self) -> Any:
        """A native builder of one partition's posting lists (``FtsPostingsBuilder``), with
        positions when the index stores them."""
        return _lancepy.FtsPostingsBuilder(self._analyzer(), self.with_position)

    def query_tokens(self, text: str) -> Tuple[List[str], List[int]]:
        """``(tokens, positions)`` of one query text, in order (repeats kept); the native
        analyzer is built once. A JSON index's query is ``<path>,<type>,<value>`` triplets
        separated by ``;`` (a ``str`` value analyzed, others kept as written); a malformed one
        raises InvalidArgumentError."""
        return self._analyzer().tokens(text)

    def raw_query_tokens(self, text: str) -> List[str]:
        """The tokens of a fuzzy query's text as pylance splits it: the ``simple`` tokenizer
        with no filter (no lower-casing, stemming or stop words); for a JSON index, its
        triplets with their ``str`` values split that way."""
        return _lancepy.FtsAnalyzer("simple", None, False, None, None, False, json=self.json).tokens(text)[0]

    def _analyzer(self) -> Any:
        """The native analyzer (``FtsAnalyzer``), built on first use."""
        if self._native is None:
            self._native = _lancepy.FtsAnalyzer(*self._native_args(), json=self.json)
        return self._native

    def tokens(self, text: str) -> List[str]:
        """The tokens of one query text, in order (repeats kept)."""
        return self.query_tokens(text)[0]


#: Where pylance looks for language models when ``LANCE_LANGUAGE_MODEL_HOME`` is not set:
#: this directory of the user's local data directory.
_MODELS_DIR = os.path.join("lance", "language_models")


def language_model_home() -> str:
    """The directory of language models (``jieba/<model>``): ``LANCE_LANGUAGE_MODEL_HOME``,
    else ``lance/language_models`` in the user's local data directory, as pylance 14's."""
    home = os.environ.get("LANCE_LANGUAGE_MODEL_HOME")
    if home:
        return home
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, _MODELS_DIR)


def _jieba_model(base_tokenizer: Any) -> Optional[Tuple[str, List[str]]]:
    """``(main dictionary, user dictionaries)`` of a ``jieba`` / ``jieba/<model>`` tokenizer
    (``None`` for other tokenizers): the model directory's ``config.json`` may name them
    (``{"main": ..., "users": [...]}``), else the main one is ``dict.txt``."""
    if not isinstance(base_tokenizer, str) or not (base_tokenizer == "jieba" or base_tokenizer.startswith("jieba/")):
        return None
    name = "jieba/default" if base_tokenizer == "jieba" else base_tokenizer
    root = os.path.join(language_model_home(), *name.split("/"))
    if not os.path.isdir(root):
        raise InvalidArgumentError(f"Invalid directory path: {root} (the {base_tokenizer!r} tokenizer's model: its "
                                   "dict.txt, and optionally config.json; LANCE_LANGUAGE_MODEL_HOME sets where models are)")
    config: Dict[str, Any] = {}
    config_path = os.path.join(root, "config.json")
    if os.path.exists(config_path):
        try:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            raise InvalidArgumentError(f"jieba model {root}: config.json: {e}") from None
        if not isinstance(config, dict):
            raise InvalidArgumentError(f"jieba model {root}: config.json must be an object")
    main = os.path.join(root, str(config.get("main") or "dict.txt"))
    users = [os.path.join(root, str(u)) for u in (config.get("users") or [])]
    return main, users


def _lindera_model(base_tokenizer: Any) -> Optional[Tuple[str, List[str]]]:
    """``(configuration, [])`` of a ``lindera/<model>`` tokenizer (``None`` for other
    tokenizers): the model directory's ``config.yml`` (lindera's configuration: the compiled
    dictionary and the segmenter's mode), else the file ``LINDERA_CONFIG_PATH`` names, as
    pylance 14 finds it. Build a dictionary with :func:`lancepy.indices.build_lindera_dictionary`."""
    if not isinstance(base_tokenizer, str) or not base_tokenizer.startswith("lindera/"):
        return None
    root = os.path.join(language_model_home(), *base_tokenizer.split("/"))
    if not os.path.isdir(root):
        raise InvalidArgumentError(f"Invalid directory path: {root} (the {base_tokenizer!r} tokenizer's model: its "
                                   "config.yml; LANCE_LANGUAGE_MODEL_HOME sets where models are)")
    config = os.path.join(root, "config.yml")
    if not os.path.exists(config):
        config = os.environ.get("LINDERA_CONFIG_PATH") or ""
        if not config:
            raise InvalidArgumentError(f"lindera model {root} has no config.yml (and LINDERA_CONFIG_PATH is not set)")
    return config, []


def check_params(options: Dict[str, Any]) -> Dict[str, Any]:
    """pylance 14's ``params`` for the ``create_scalar_index`` keyword `options` (``None`` =
    default). Raises for values lancepy cannot honour."""
    options = dict(options)
    analyzer = _analyzer_profile(options.pop("analyzer", None), options)
    params = dict(DEFAULT_PARAMS)
    if analyzer == "code":
        params.update(_CODE_DEFAULTS)
    for k, v in options.items():
        if v is None and k != "max_token_length":  # (max_token_length=None: no limit, as pylance)
            continue
        if k == "lance_tokenizer":
            raise InvalidArgumentError(
                "unknown FTS index parameter 'lance_tokenizer' (the document tokenizer follows the column: JSON "
                "documents for a JSON column, else text, as pylance 14 decides it)"
            )
        if k not in params:
            raise InvalidArgumentError(f"create_scalar_index: unknown INVERTED option {k}")
        params[k] = v
    # (None: the build infers it from the column, as pylance: 'json' for a JSON column, else
    # 'text'; pylance 14's create_scalar_index takes no such option)
    params["lance_tokenizer"] = None
    if isinstance(params["base_tokenizer"], str):
        params["base_tokenizer"] = params["base_tokenizer"].lower()
    if params["base_tokenizer"] == "ngram":  # (pylance: no stemming or stop words for n-grams unless asked)
        for k in ("stem", "remove_stop_words"):
            if options.get(k) is None:
                params[k] = False
    if params["max_token_length"] is not None and int(params["max_token_length"]) <= 0:
        raise InvalidArgumentError("max_token_length must be positive")
    if int(params["block_size"]) % 128 or int(params["block_size"]) <= 0:
        raise InvalidArgumentError(f"block_size must be a positive multiple of 128, got {params['block_size']}")
    for key in ("max_token_length", "block_size", "min_ngram_length", "max_ngram_length"):
        if params[key] is not None and not 0 <= int(params[key]) <= 0xFFFF_FFFF:
            raise InvalidArgumentError(f"{key} must be a 32-bit unsigned number, got {params[key]}")
    params["language"] = canonical_language(params["language"])
    Analyzer(params)  # (refuses what lancepy cannot analyze)
    return params


#: What pylance 14's ``code`` analyzer profile sets (explicit options override it).
_CODE_DEFAULTS = {"base_tokenizer": "code", "split_identifiers": False, "split_on_numerics": True,
                  "preserve_original": True, "stem": False, "remove_stop_words": False}


def _analyzer_profile(analyzer: Any, options: Dict[str, Any]) -> str:
    """The analyzer profile (``"text"`` or ``"code"``, pylance 14's ``analyzer`` option; not
    stored) of `options`: given, else ``"code"`` for ``base_tokenizer="code"``. Raises for
    options the profile does not allow, as pylance does."""
    base = options.get("base_tokenizer")
    base = base.lower() if isinstance(base, str) else base
    if analyzer is None:
        analyzer = "code" if base == "code" else "text"
    if analyzer not in ("text", "code"):
        raise InvalidArgumentError(f"unknown analyzer {analyzer!r}, expected 'text' or 'code'")
    if analyzer == "text" and base == "code":
        raise InvalidArgumentError("base_tokenizer='code' requires analyzer='code'")
    if analyzer == "code" and base not in (None, "code"):
        raise InvalidArgumentError(f"analyzer='code' requires base_tokenizer='code', got {base!r}")
    if analyzer == "text" and any(options.get(k) for k in _CODE_FLAGS):
        raise InvalidArgumentError("code analyzer flags require analyzer='code'")
    return analyzer
