"""Placeholder while the openai_responses module is being written; replaced before commit."""

from typing import Any


class _Pending:
    name = "openai_responses"

    def __getattr__(self, attr: str) -> Any:
        raise NotImplementedError("openai_responses provider is being written")


PROVIDER: Any = _Pending()
