"""``storage_options``: how a dataset or file on object storage is reached.

The keys are pylance's (which are ``object_store``'s): ``aws_access_key_id``,
``aws_secret_access_key``, ``aws_session_token``, ``aws_region`` / ``region``,
``aws_endpoint`` / ``endpoint``, ``allow_http``, ``virtual_hosted_style_request``, the
``google_*`` and ``azure_*`` keys, ``timeout`` / ``connect_timeout``, plus
``client_max_retries`` and ``client_retry_timeout`` (seconds). Environment variables
(``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) are read first; the options override them. An unknown
key raises :class:`~lancepy.exceptions.UnsupportedError` when the store is opened.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from lancepy.exceptions import InvalidArgumentError

StorageOptions = Optional[Mapping[str, Any]]


def normalize_storage_options(options: StorageOptions) -> Optional[Dict[str, str]]:
    """A plain ``{str: str}`` copy of `options` (``None`` stays ``None``).

    Values must be strings as in pylance; booleans and numbers are accepted and spelled the
    way the stores parse them (``True`` → ``"true"``).
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"storage_options must be a dict of strings, got {type(options).__name__}")
    out: Dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"storage_options keys must be strings, got {key!r}")
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise InvalidArgumentError(
                f"storage_options[{key!r}] must be a string, got {type(value).__name__}"
            )
    return out
