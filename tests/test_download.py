"""Tests for syntax_t2t.data.download (file:// URLs; no network needed)."""

import os

import pytest

from syntax_t2t.data.download import DownloadError, maybe_download


def test_downloads_a_file_url(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data = bytes(range(256)) * 5000  # more than one read chunk
    (mirror / "remote.bin").write_bytes(data)
    path = maybe_download(str(tmp_path / "tmp"), "local.bin", (mirror / "remote.bin").as_uri())
    assert path == str(tmp_path / "tmp" / "local.bin")
    assert (tmp_path / "tmp" / "local.bin").read_bytes() == data
    assert os.listdir(tmp_path / "tmp") == ["local.bin"], "temporary file left behind"


def test_an_existing_file_is_not_downloaded_again(tmp_path):
    (tmp_path / "local.bin").write_bytes(b"mine")
    # The URL does not exist: a download attempt would fail.
    path = maybe_download(str(tmp_path), "local.bin", (tmp_path / "absent").as_uri())
    assert path == str(tmp_path / "local.bin")
    assert (tmp_path / "local.bin").read_bytes() == b"mine"


def test_a_failed_download_says_where_to_put_the_file_and_leaves_nothing(tmp_path):
    url = (tmp_path / "absent.conllu").as_uri()
    with pytest.raises(DownloadError) as error:
        maybe_download(str(tmp_path / "tmp"), "x.conllu", url)
    message = str(error.value)
    assert url in message and str(tmp_path / "tmp" / "x.conllu") in message
    assert "put it at" in message
    assert os.listdir(tmp_path / "tmp") == []


def test_a_malformed_url_is_a_download_error(tmp_path):
    with pytest.raises(DownloadError, match="could not download"):
        maybe_download(str(tmp_path), "x", "no-scheme-here")
