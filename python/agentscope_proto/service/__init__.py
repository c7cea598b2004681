"""The gRPC FormatterService.

`servicer` translates RPCs to the in-process API (`_rpc` holds the shared
decoding, deadline and error plumbing; `status` maps errors to statuses and
back); `config` says how the server runs and what a request may cost; `auth`
checks bearer tokens; `app` assembles and runs the server (with `reflection`,
documented descriptors; `workers`, processes sharing a port; `connect`, the
same servicer over plain HTTP with the `http` extra).
"""

from .app import build_server, serve, set_serving
from .auth import BearerTokenAuth
from .config import ServerConfig
from .servicer import SERVICE_NAME, FormatterServicer, provider_name

__all__ = [
    "SERVICE_NAME",
    "BearerTokenAuth",
    "FormatterServicer",
    "ServerConfig",
    "build_server",
    "provider_name",
    "serve",
    "set_serving",
]
