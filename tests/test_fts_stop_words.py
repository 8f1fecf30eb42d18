"""Stop words of every language pylance 14 knows: lancepy's lists drop exactly the tokens
pylance's drop, and an index either library builds with ``language=`` is the other's."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy._ops import inverted
from lancepy._ops.stopwords import STOP_WORDS, canonical_language
from lancepy.exceptions import InvalidArgumentError
from lancepy.file import LanceFileReader

LANGUAGES = sorted(STOP_WORDS)
#: Every list's words, and a few that are in none.
CANDIDATES = sorted(set().union(*STOP_WORDS.values()) | {"bonjour", "lance", "vector", "Ünïcödé", "dataset"})


def test_every_pylance_language_has_a_list():
    assert LANGUAGES == [
        "Arabic", "Danish", "Dutch", "English", "Finnish", "French", "German", "Greek", "Hungarian", "Italian",
        "Norwegian", "Portuguese", "Romanian", "Russian", "Spanish", "Swedish", "Tamil", "Turkish",
    ]
    assert all(len(STOP_WORDS[lang]) >= 40 for lang in LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_list_drops_what_pylance_drops(tmp_path, language):
    """pylance indexes every candidate as one raw token (no lower-casing, stemming or
    folding); the tokens its index leaves out are exactly lancepy's list."""
    path = tmp_path / "d"
    ds = lance.write_dataset(pa.table({"t": CANDIDATES}), str(path))
    ds.create_scalar_index("t", "INVERTED", base_tokenizer="raw", language=language, lower_case=False, stem=False,
                           remove_stop_words=True, ascii_folding=False, max_token_length=None)
    _, postings = inverted.read_postings(str(path), ds.list_indices()[0]["uuid"])
    dropped = set(CANDIDATES) - set(postings.vocab)
    assert dropped == STOP_WORDS[language], (sorted(dropped - STOP_WORDS[language])[:10],
                                            sorted(STOP_WORDS[language] - dropped)[:10])


def _docs(language: str, n: int, seed: int) -> list:
    """Texts of the language's stop words (some capitalised) between other lists' words."""
    rng = random.Random(seed)
    stop = sorted(STOP_WORDS[language])
    other = sorted(set(CANDIDATES) - STOP_WORDS[language])
    docs = []
    for _ in range(n):
        words = [rng.choice(stop if rng.random() < 0.4 else other) for _ in range(rng.randint(1, 25))]
        docs.append(" ".join(w.capitalize() if rng.random() < 0.2 else w for w in words))
    return docs


@pytest.mark.parametrize("language", LANGUAGES)
def test_default_analyzer_builds_pylance_index(tmp_path, language):
    """With pylance's defaults (lower-casing, stemming, stop words, folding) and the
    language, lancepy's token and document files equal pylance's, and pylance answers
    from lancepy's index with its own index's rows."""
    docs = _docs(language, 400, LANGUAGES.index(language))
    paths = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        paths[who] = tmp_path / who
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "t": docs}), str(paths[who]))
        lib.dataset(str(paths[who])).create_scalar_index("t", "INVERTED", language=language)
    for name in ["part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a, b = (LanceFileReader(str(next((paths[w] / "_indices").glob(f"*/{name}")))).read_all().to_table()
                for w in ("pylance", "lancepy"))
        assert a.equals(b), name
    rng = random.Random(1)
    for q in rng.sample(docs, 10):
        kw = dict(full_text_query=q, columns=["id"])
        ref = lance.dataset(str(paths["pylance"])).to_table(**kw)
        for got in (lance.dataset(str(paths["lancepy"])).to_table(**kw), lancepy.dataset(str(paths["pylance"])).to_table(**kw)):
            assert sorted(got.column("id").to_pylist()) == sorted(ref.column("id").to_pylist())


def test_language_names(tmp_path):
    """Names are matched without regard to case and stored in pylance's spelling (pylance
    reads only that); an unknown language is refused before anything is written."""
    assert canonical_language("french") == canonical_language("FRENCH") == "French"
    path = tmp_path / "d"
    lancepy.write_dataset(pa.table({"t": ["le chat noir", "un chien"]}), str(path))
    ds = lancepy.dataset(str(path))
    with pytest.raises(InvalidArgumentError, match="Klingon"):
        ds.create_scalar_index("t", "INVERTED", language="Klingon")
    with pytest.raises(InvalidArgumentError, match="unknown language"):
        ds.create_scalar_index("t", "INVERTED", language="Klingon", stem=False, remove_stop_words=False)
    assert ds.list_indices() == []
    ds.create_scalar_index("t", "INVERTED", language="french")
    params = lance.dataset(str(path)).stats.index_stats("t_idx")["indices"][0]["params"]
    assert params["language"] == "French"
    assert lance.dataset(str(path)).to_table(full_text_query="le").num_rows == 0  # ("le": a French stop word)
    assert lance.dataset(str(path)).to_table(full_text_query="chat").column("t").to_pylist() == ["le chat noir"]
