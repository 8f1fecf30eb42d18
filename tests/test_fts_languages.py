"""Languages and tokenizers of full-text indices against pylance 14: every language's stop
words and stemmer (an index either library builds with ``language=`` is the other's), and the
ICU word segmenter (``base_tokenizer="icu"`` / ``"icu/split"``) on mixed-script text."""

from __future__ import annotations

import json
import os
import random
import shutil

import lance
import pyarrow as pa
import pytest

import lancepy
import lancepy.query
from lancepy._ops import inverted
from lancepy._ops.stopwords import ICU_STOP_WORDS, STOP_WORDS, canonical_language
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


def _index_files_equal(paths: dict) -> None:
    for name in ["part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a, b = (LanceFileReader(str(next((paths[w] / "_indices").glob(f"*/{name}")))).read_all().to_table()
                for w in ("pylance", "lancepy"))
        assert a.equals(b), name


def _build_both(tmp_path, docs: list, **options) -> dict:
    """The same table written twice, indexed by pylance and by lancepy with `options`."""
    paths = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        paths[who] = tmp_path / who
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "t": docs}), str(paths[who]))
        lib.dataset(str(paths[who])).create_scalar_index("t", "INVERTED", **options)
    return paths


def _same_answers(paths: dict, queries: list) -> None:
    """pylance on lancepy's index, and lancepy on pylance's, find pylance's own rows."""
    for q in queries:
        kw = dict(full_text_query=q, columns=["id"])
        ref = sorted(lance.dataset(str(paths["pylance"])).to_table(**kw).column("id").to_pylist())
        assert sorted(lance.dataset(str(paths["lancepy"])).to_table(**kw).column("id").to_pylist()) == ref, q
        assert sorted(lancepy.dataset(str(paths["pylance"])).to_table(**kw).column("id").to_pylist()) == ref, q


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
    paths = _build_both(tmp_path, docs, language=language)
    _index_files_equal(paths)
    _same_answers(paths, random.Random(1).sample(docs, 10))


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


#: Pieces of mixed-script text: words with spaces, scripts written without them (Chinese,
#: Japanese, Thai), numbers, contractions and punctuation.
PIECES = (
    "Hello world it's 4.5 3,000 e-mail user@example.com U.S.A. naïve Straße ÅNGSTRÖM the and of is "
    "我们 的 数据 格式 是 一个 开源 项目 向量 检索 很 快 北京 大学 生物 学 "
    "私 は データ ベース を 使って います 東京 こんにちは 世界 カタカナ "
    "ภาษา ไทย เป็น ภาษา ที่ ไม่มี ช่องว่าง สวัสดี ครับ "
    "한국어 는 띄어쓰기 를 합니다 데이터 그리고 "
    "Москва и в не что данные العربية في من على και το"
).split()


def _joined(pieces: list, separators: list, n: int, seed: int, most: int) -> list:
    """`n` seeded documents of 1 to `most` pieces, each followed by one of `separators`."""
    rng = random.Random(seed)
    return ["".join(p + rng.choice(separators) for p in rng.choices(pieces, k=rng.randint(1, most))) for _ in range(n)]


def _mixed_docs(n: int, seed: int) -> list:
    return _joined(PIECES, ["", "", " ", " ", ", ", "。", "! ", "-", "_"], n, seed, 20)


def test_icu_stop_words_drop_what_pylance_drops(tmp_path):
    """With an ``icu`` tokenizer pylance drops its languages' lists together (and Chinese,
    Japanese and Korean ones): the tokens it drops of every candidate are lancepy's list."""
    cands = sorted(set(CANDIDATES) | ICU_STOP_WORDS)
    vocab = {}
    for remove in (True, False):
        path = tmp_path / f"d{remove}"
        ds = lance.write_dataset(pa.table({"t": cands}), str(path))
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="icu", lower_case=False, stem=False,
                               remove_stop_words=remove, ascii_folding=False, max_token_length=None)
        vocab[remove] = set(inverted.read_postings(str(path), ds.list_indices()[0]["uuid"])[1].vocab)
    assert vocab[False] - vocab[True] == ICU_STOP_WORDS


@pytest.mark.parametrize("tokenizer", ["icu", "icu/split"])
@pytest.mark.parametrize("options", [{}, {"stem": False, "remove_stop_words": False, "lower_case": False},
                                     {"language": "German", "ascii_folding": False, "with_position": True}])
def test_icu_tokenizer_builds_pylance_index(tmp_path, tokenizer, options):
    """Mixed-script documents (CJK and Thai run together, punctuation, numbers): lancepy's
    index files equal pylance's, and each library answers from the other's index."""
    docs = _mixed_docs(500, len(tokenizer) + len(options))
    paths = _build_both(tmp_path, docs, base_tokenizer=tokenizer, **options)
    _index_files_equal(paths)
    queries = random.Random(3).sample(docs, 8) + ["数据", "こんにちは", "ภาษา", "it's", "4.5", "user@example.com"]
    _same_answers(paths, queries)
    if options.get("with_position"):
        for q in ['"数据 格式"', '"hello world"']:
            kw = dict(full_text_query=lancepy.query.PhraseQuery(q.strip('"'), "t"), columns=["id"])
            ref = sorted(lance.dataset(str(paths["pylance"])).to_table(
                full_text_query=lance.query.PhraseQuery(q.strip('"'), "t"), columns=["id"]).column("id").to_pylist())
            assert sorted(lancepy.dataset(str(paths["pylance"])).to_table(**kw).column("id").to_pylist()) == ref


#: Pieces of source code: identifiers of every case style, digits, non-ASCII letters,
#: operators (several fused) and punctuation.
CODE_PIECES = (
    "parseHTML2JSON my_var __init__ _private HTMLParser getUserName x2y i18n IOError snake_case_name "
    "CamelCase ALLCAPS a1b2C3 naïveÜber Δx the and running Connections fn let return self "
    ":: -> != >>>= && || => <=> ? ~ / // ** += <- |> ~= = < > ! % ^ ( ) { } ; , . \" '"
).split()


def _code_docs(n: int, seed: int) -> list:
    return _joined(CODE_PIECES, ["", " ", " ", "\n", ".", "(", "_"], n, seed, 30)


@pytest.mark.parametrize("options", [
    {"base_tokenizer": "code"},
    {"analyzer": "code", "split_identifiers": True},
    {"base_tokenizer": "code", "split_identifiers": True, "index_operators": True, "preserve_original": False,
     "split_on_numerics": False, "with_position": True},
    {"base_tokenizer": "code", "split_identifiers": True, "stem": True, "remove_stop_words": True, "lower_case": False,
     "max_token_length": 6},
])
def test_code_analyzer_builds_pylance_index(tmp_path, options):
    """pylance 14's code analyzer (identifiers split at ``_``, case changes and digits, the
    whole one kept at the first word's position, operators by longest match): lancepy's index
    files and index details equal pylance's, and each library answers from the other's."""
    docs = _code_docs(400, len(options))
    paths = _build_both(tmp_path, docs, **options)
    _index_files_equal(paths)
    a, b = ([i.details for i in lance.dataset(str(paths[w])).describe_indices()] for w in ("pylance", "lancepy"))
    assert a == b
    queries = random.Random(5).sample(docs, 8) + ["parse", "html", "2", "json", "user", "->", "my_var", "Δx", "naïve"]
    _same_answers(paths, queries)


def test_code_analyzer_options_refused_as_pylance(tmp_path):
    path = tmp_path / "d"
    lancepy.write_dataset(pa.table({"t": ["a::b"]}), str(path))
    ds = lancepy.dataset(str(path))
    for kw, match in [({"analyzer": "text", "base_tokenizer": "code"}, "requires analyzer='code'"),
                      ({"analyzer": "code", "base_tokenizer": "simple"}, "requires base_tokenizer='code'"),
                      ({"split_identifiers": True}, "code analyzer flags"),
                      ({"analyzer": "prose"}, "unknown analyzer")]:
        with pytest.raises(InvalidArgumentError, match=match):
            ds.create_scalar_index("t", "INVERTED", **kw)
        with pytest.raises(Exception, match=match):
            lance.dataset(str(path)).create_scalar_index("t", "INVERTED", **kw)
    assert ds.list_indices() == []


@pytest.fixture
def jieba_models(tmp_path, monkeypatch):
    """A language-model home with ``jieba/default``: the words of jieba's own dictionary
    (from the ``jieba`` package) of frequency 500 or more (quicker to load, for pylance loads
    a model at each query), and ``jieba/custom``: the whole dictionary, named in config.json
    with a user dictionary of two new words."""
    import importlib.util

    spec = importlib.util.find_spec("jieba")
    assert spec is not None and spec.submodule_search_locations, "the jieba package (its dictionary) is a test requirement"
    words = os.path.join(list(spec.submodule_search_locations)[0], "dict.txt")
    home = tmp_path / "models"
    (home / "jieba" / "default").mkdir(parents=True)
    with open(words, encoding="utf-8") as f:
        common = [line for line in f if int(line.split()[1]) >= 500]
    (home / "jieba" / "default" / "dict.txt").write_text("".join(common), encoding="utf-8")
    (home / "jieba" / "custom").mkdir(parents=True)
    shutil.copy(words, home / "jieba" / "custom" / "main.txt")
    (home / "jieba" / "custom" / "user.txt").write_text("兰斯数据 1000 n\n向量检索引擎 500 n\n", encoding="utf-8")
    (home / "jieba" / "custom" / "config.json").write_text(json.dumps({"main": "main.txt", "users": ["user.txt"]}))
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    return home


def _chinese_docs(home, n: int, seed: int) -> list:
    """Running Chinese text of the dictionary's common words (and the user dictionary's),
    with punctuation, spaces and some English."""
    with open(home / "jieba" / "default" / "dict.txt", encoding="utf-8") as f:
        common = [line.split()[0] for line in f if int(line.split()[1]) > 20000]
    common = sorted(common)[:: max(1, len(common) // 600)] + ["兰斯数据", "向量检索引擎", "Lance", "GPU", "the", "data"]
    return _joined(common, ["", "", "", "，", "。", " ", "、"], n, seed, 30)


@pytest.mark.parametrize("tokenizer,options", [
    ("jieba/default", {}),
    ("jieba", {"with_position": True, "remove_stop_words": False}),
    ("jieba/custom", {"lower_case": False, "max_token_length": 3}),
])
def test_jieba_builds_pylance_index(tmp_path, jieba_models, tokenizer, options):
    """jieba's search-mode segmentation with the model's dictionaries (config.json's main
    and user dictionaries): lancepy's index files equal pylance's, each library answers
    from the other's index, and a phrase query finds pylance's rows."""
    docs = _chinese_docs(jieba_models, 300, len(tokenizer))
    paths = _build_both(tmp_path, docs, base_tokenizer=tokenizer, **options)
    _index_files_equal(paths)
    rng = random.Random(7)
    queries = [d[: rng.randint(2, 8)] for d in rng.sample(docs, 5)] + ["兰斯数据", "检索", "Lance"]
    _same_answers(paths, queries)
    if options.get("with_position"):
        for d in rng.sample(docs, 3):
            q = d[:6]
            ref = sorted(lance.dataset(str(paths["pylance"])).to_table(
                full_text_query=lance.query.PhraseQuery(q, "t"), columns=["id"]).column("id").to_pylist())
            got = lancepy.dataset(str(paths["pylance"])).to_table(full_text_query=lancepy.query.PhraseQuery(q, "t"),
                                                                   columns=["id"])
            assert sorted(got.column("id").to_pylist()) == ref, q


def test_jieba_model_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(tmp_path / "nowhere"))
    path = tmp_path / "d"
    lancepy.write_dataset(pa.table({"t": ["我们的数据"]}), str(path))
    with pytest.raises(InvalidArgumentError, match="Invalid directory path"):
        lancepy.dataset(str(path)).create_scalar_index("t", "INVERTED", base_tokenizer="jieba/default")
    (tmp_path / "nowhere" / "jieba" / "default").mkdir(parents=True)
    with pytest.raises(InvalidArgumentError, match="dict.txt"):
        lancepy.dataset(str(path)).create_scalar_index("t", "INVERTED", base_tokenizer="jieba/default")
    assert lancepy.dataset(str(path)).list_indices() == []


def test_ascii_folding_of_every_code_point(tmp_path):
    """Every character above ASCII (to U+1FFFF), each a document of the raw tokenizer with
    ASCII folding: lancepy's token and document files equal pylance's."""
    chars = [chr(c) for c in range(0x80, 0x20000) if not 0xD800 <= c <= 0xDFFF]
    paths = _build_both(tmp_path, chars, base_tokenizer="raw", lower_case=False, stem=False, remove_stop_words=False,
                        ascii_folding=True, max_token_length=None)
    _index_files_equal(paths)
