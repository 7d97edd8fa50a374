"""Downloading raw data into `tmp_dir`, as T2T's `generator_utils.maybe_download`.

A file already in `tmp_dir` is never fetched again, so a user without
network access can put the files there by hand. Downloads are atomic: the
data goes to a temporary name and is renamed when complete, so an interrupted
download never passes for the file.
"""

import os
import time
import urllib.error
import urllib.request

from absl import logging

from syntax_t2t import io_utils

_CHUNK_BYTES = 1 << 20
_TIMEOUT_SECONDS = 60


class DownloadError(OSError):
    """A file could not be downloaded; the message says where to put it by hand."""


def maybe_download(directory: str, filename: str, url: str) -> str:
    """Downloads `url` to `directory/filename` unless that file exists.

    Args:
        directory: where the file goes (created if needed), usually `tmp_dir`.
        filename: the name to store the file under.
        url: http(s):// or file:// URL.

    Returns:
        The path of the file.

    Raises:
        DownloadError: the download failed; names the URL and the path where
            the file can be put by hand.
    """
    path = os.path.join(directory, filename)
    if os.path.isfile(path):
        logging.info("found %s, not downloading it", path)
        return path
    os.makedirs(directory, exist_ok=True)
    logging.info("downloading %s to %s", url, path)
    start = time.monotonic()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_SECONDS) as response, \
                io_utils.atomic_write(path, "wb") as stream:
            while True:
                chunk = response.read(_CHUNK_BYTES)
                if not chunk:
                    break
                stream.write(chunk)
                size += len(chunk)
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise DownloadError(
            f"could not download {url} to {path}: {reason}. Without network access, "
            f"download the file elsewhere and put it at {path}") from error
    logging.info("downloaded %s (%d bytes in %.1f s)", path, size, time.monotonic() - start)
    return path

