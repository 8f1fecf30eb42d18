"""INVERTED indices with pylance 14's ``lindera/<model>`` tokenizers: a dictionary in MeCab's
format, compiled by :func:`lancepy.indices.build_lindera_dictionary` (lindera 3.0.7, the
release pylance 14 reads dictionaries with), under ``$LANCE_LANGUAGE_MODEL_HOME/lindera/<model>``
with lindera's ``config.yml``. Both libraries build the index; the files are compared, and
each library answers from the other's index."""

from __future__ import annotations

import json
import random
import shutil

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CorruptFileError, InvalidArgumentError, LanceError, NotSupportedError
from lancepy.indices import build_lindera_dictionary
from test_fts_languages import _build_both, _index_files_equal, _same_answers

lance = pytest.importorskip("lance")

#: (surface, cost, part of speech): a few Japanese words, the classic segmentation examples.
WORDS = [
    ("東京", 100, "名詞"), ("東京都", 300, "名詞"), ("都", 200, "名詞"), ("京都", 150, "名詞"), ("に", 50, "助詞"),
    ("住ん", 100, "動詞"), ("で", 50, "助詞"), ("いる", 100, "動詞"), ("すもも", 100, "名詞"), ("もも", 100, "名詞"),
    ("も", 50, "助詞"), ("の", 50, "助詞"), ("うち", 100, "名詞"), ("データ", 100, "名詞"), ("検索", 100, "名詞"),
    ("全文", 100, "名詞"), ("全文検索", 250, "名詞"), ("は", 50, "助詞"), ("速い", 100, "形容詞"), ("Lance", 100, "名詞"),
]

CHAR_DEF = """DEFAULT 0 1 0
SPACE 0 1 0
KANJI 0 0 2
HIRAGANA 1 1 0
KATAKANA 1 1 0
ALPHA 1 1 0
NUMERIC 1 1 0
0x0020 SPACE
0x0030..0x0039 NUMERIC
0x0041..0x005A ALPHA
0x0061..0x007A ALPHA
0x3041..0x309F HIRAGANA
0x30A1..0x30FF KATAKANA
0x4E00..0x9FFF KANJI
"""


def _source(path) -> None:
    path.mkdir(parents=True)
    rows = [f"{w},0,0,{cost},{pos},*,*,*,*,*,{w},*,*" for w, cost, pos in WORDS]
    (path / "words.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (path / "matrix.def").write_text("1 1\n0 0 0\n", encoding="utf-8")
    (path / "char.def").write_text(CHAR_DEF, encoding="utf-8")
    unk = [f"{c},0,0,{1000 if c != 'SPACE' else 10},名詞,*,*,*,*,*,*,*,*"
           for c in ("DEFAULT", "SPACE", "KANJI", "HIRAGANA", "KATAKANA", "ALPHA", "NUMERIC")]
    (path / "unk.def").write_text("\n".join(unk) + "\n", encoding="utf-8")
    fields = ["surface", "left_context_id", "right_context_id", "cost", "major_pos", "pos_detail_1", "pos_detail_2",
              "pos_detail_3", "conjugation_type", "conjugation_form", "base_form", "reading", "pronunciation"]
    metadata = {
        "name": "tiny", "encoding": "UTF-8", "default_word_cost": -10000, "default_left_context_id": 0,
        "default_right_context_id": 0, "default_field_value": "*", "flexible_csv": True,
        "skip_invalid_cost_or_id": False, "normalize_details": False,
        "dictionary_schema": {"fields": fields}, "user_dictionary_schema": {"fields": ["surface", "reading", "pronunciation"]},
    }
    (path / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")


@pytest.fixture
def lindera_home(tmp_path, monkeypatch):
    """``lindera/tiny``: the dictionary above, compiled, with lindera's config.yml."""
    _source(tmp_path / "src")
    home = tmp_path / "models"
    model = home / "lindera" / "tiny"
    build_lindera_dictionary(tmp_path / "src", model / "dict")
    (model / "config.yml").write_text(f'segmenter:\n  mode: "normal"\n  dictionary: "{model / "dict"}"\n', encoding="utf-8")
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    return home


def _docs(n: int, seed: int) -> list:
    rng = random.Random(seed)
    phrases = ["東京都に住んでいる", "すもももももももものうち", "全文検索は速い", "京都に住んでいる", "Lance データ 検索", "東京 の データ"]
    return ["".join(rng.choice(phrases) for _ in range(rng.randint(1, 4))) for _ in range(n)]


@pytest.mark.parametrize("options", [{}, {"with_position": True}, {"lower_case": False, "remove_stop_words": False}],
                         ids=["default", "positions", "as-is"])
def test_lindera_builds_pylance_index(tmp_path, lindera_home, options):
    docs = _docs(200, 3)
    paths = _build_both(tmp_path, docs, base_tokenizer="lindera/tiny", **options)
    _index_files_equal(paths)
    _same_answers(paths, ["東京", "東京都", "すもも", "全文検索", "住んでいる", "lance", "データ 検索", "大阪"])
    if options.get("with_position"):
        for q in ["住んでいる", "全文検索は", "ももの"]:
            kw = dict(columns=["id"])
            ref = sorted(lance.dataset(str(paths["pylance"])).to_table(
                full_text_query=lance.query.PhraseQuery(q, "t"), **kw).column("id").to_pylist())
            for path in paths.values():
                got = lancepy.dataset(str(path)).to_table(full_text_query=lancepy.query.PhraseQuery(q, "t"), **kw)
                assert sorted(got.column("id").to_pylist()) == ref, q


def test_lindera_scores_equal_pylance(tmp_path, lindera_home):
    paths = _build_both(tmp_path, _docs(100, 5), base_tokenizer="lindera/tiny")
    for q in ["東京都", "もも", "検索"]:
        # (every matching row: a top-k cut may fall among equal scores)
        ref = lance.dataset(str(paths["pylance"])).to_table(full_text_query=q, columns=["id"])
        got = lancepy.dataset(str(paths["lancepy"])).to_table(full_text_query=q, columns=["id"])
        assert got.num_rows > 0
        assert dict(zip(got["id"].to_pylist(), got["_score"].to_pylist())) == pytest.approx(
            dict(zip(ref["id"].to_pylist(), ref["_score"].to_pylist())), rel=1e-5), q


def test_lindera_model_errors(tmp_path, monkeypatch, lindera_home):
    path = tmp_path / "d"
    lancepy.write_dataset(pa.table({"t": ["東京都に住んでいる"]}), str(path))
    ds = lancepy.dataset(str(path))
    with pytest.raises(InvalidArgumentError, match="Invalid directory path"):
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="lindera/missing")
    model = lindera_home / "lindera" / "tiny"
    config = (model / "config.yml").read_text(encoding="utf-8")
    (model / "config.yml").write_text(config + "token_filters:\n  - kind: lowercase\n", encoding="utf-8")
    with pytest.raises(NotSupportedError, match="token_filters"):
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="lindera/tiny")
    for name, data in ((p.name, p.read_bytes()) for p in sorted((model / "dict").iterdir())):
        broken = tmp_path / "broken"
        broken.mkdir(exist_ok=True)
        (broken / name).write_bytes(data[: len(data) // 2] + b"\xff" * 64)
    (model / "config.yml").write_text(f'segmenter:\n  dictionary: "{tmp_path / "broken"}"\n', encoding="utf-8")
    with pytest.raises(LanceError):  # (a damaged dictionary: lancepy's exception, never a panic)
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="lindera/tiny")
    damaged = tmp_path / "damaged"
    shutil.copytree(model / "dict", damaged)
    (damaged / "dict.vals").write_bytes(b"\xff" * (damaged / "dict.vals").stat().st_size)  # (word ids past its tables)
    (model / "config.yml").write_text(f'segmenter:\n  dictionary: "{damaged}"\n', encoding="utf-8")
    with pytest.raises(CorruptFileError, match="lindera model"):  # (lindera panics: reported, not unwound)
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="lindera/tiny")
    (model / "config.yml").unlink()
    monkeypatch.delenv("LINDERA_CONFIG_PATH", raising=False)
    with pytest.raises(InvalidArgumentError, match="config.yml"):
        ds.create_scalar_index("t", "INVERTED", base_tokenizer="lindera/tiny")
    with pytest.raises(InvalidArgumentError, match="metadata.json"):
        build_lindera_dictionary(tmp_path / "no-source", tmp_path / "out")
    assert lancepy.dataset(str(path)).list_indices() == []
