"""Placeholder while the dashscope module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "dashscope"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("dashscope provider is being written")


PROVIDER: Any = _Pending()
