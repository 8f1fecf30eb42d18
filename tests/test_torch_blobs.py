"""Blob columns (images, audio, video stored as blobs) reach PyTorch as their bytes, not as
the descriptions a scan returns: both file-version families, with DataLoader workers."""

import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

import lancepy  # noqa: E402
from lancepy.torch import LanceDataset, collate_fn  # noqa: E402

BLOB = pa.field("image", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_blob_columns_load_as_bytes(tmp_path, version):
    values = [None if i % 9 == 4 else bytes([i % 256]) * (i * 3001 % 200_000) for i in range(60)]
    table = pa.table({"id": pa.array(range(60), pa.int64()), "image": pa.array(values, pa.large_binary())},
                     schema=pa.schema([pa.field("id", pa.int64()), BLOB]))
    path = str(tmp_path / "ds")
    lancepy.write_dataset(table, path, data_storage_version=version, max_rows_per_file=25)
    data = LanceDataset(path)
    batch = data.__getitems__([5, 4, 59, 0])
    assert batch["image"] == [values[5], None, values[59], values[0]]
    assert batch["id"].tolist() == [5, 4, 59, 0]
    assert data[7]["image"] == values[7]
    assert data.read([1, 2]).column("image").to_pylist() == values[1:3]
    tensors = LanceDataset(path, binary="tensor").__getitems__([5, 59])["image"]
    assert bytes(tensors.values[int(tensors.offsets[1]) : int(tensors.offsets[2])].numpy()) == values[59]
    filtered = LanceDataset(path, filter="id >= 50", columns=["image"])
    assert filtered.__getitems__([0, 9])["image"] == [values[50], values[59]]
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=2, collate_fn=collate_fn)
    got = [v for b in loader for v in b["image"]]
    assert got == values
