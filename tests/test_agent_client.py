"""When `AgentClient` takes a reply up (`_Taking`): on a call cut off (a
dropped connection, or a server stopped with the call running: UNAVAILABLE
or CANCELLED, with no status of the server's), also after the reply's end
(a failed reply's status follows its end, and a cut there would lose it);
never on a status the server sent."""

from __future__ import annotations

from typing import Any

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto.agents.client import _Taking


class _Error(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, status: status_pb2.Status | None = None) -> None:
        self._code = code
        self._status = status

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "Cancelling all calls" if self._status is None else self._status.message

    def trailing_metadata(self) -> Any:
        if self._status is None:
            return ()
        return ((rpc_status.GRPC_DETAILS_METADATA_KEY, self._status.SerializeToString()),)


def _taking() -> _Taking:
    return _Taking(pb.ReplyRequest(session_id="s", reply_id="r"), 3, {})


def _sent_by_server() -> _Error:
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message="the state store failed")
    info = error_details_pb2.ErrorInfo(reason="StateUnavailableError", domain="agentscope-proto")
    status.details.add().Pack(info)
    return _Error(grpc.StatusCode.UNAVAILABLE, status)


def test_a_drop_after_the_replys_end_is_taken_up() -> None:
    taking = _taking()
    end = pb.ReplyResponse(done=True, cursor="1-0.abc")
    taking.saw(end)
    assert taking.wait(_Error(grpc.StatusCode.UNAVAILABLE)) is not None
    resume = taking.again(_Stub(), pb.ReplyRequest())
    assert resume == pb.ResumeRequest(session_id="s", reply_id="r", after="1-0.abc")


def test_a_status_the_server_sent_or_another_code_is_not_taken_up() -> None:
    taking = _taking()
    taking.saw(pb.ReplyResponse(cursor="1-0.abc"))
    assert taking.wait(_sent_by_server()) is None
    assert taking.wait(_Error(grpc.StatusCode.DEADLINE_EXCEEDED)) is None
    assert taking.wait(_Error(grpc.StatusCode.UNAVAILABLE)) is not None
    assert taking.wait(_Error(grpc.StatusCode.CANCELLED)) is not None  # its server stopped


class _Stub:
    @staticmethod
    def Resume(request: pb.ResumeRequest, **options: Any) -> pb.ResumeRequest:
        return request

    @staticmethod
    def Reply(request: pb.ReplyRequest, **options: Any) -> pb.ReplyRequest:
        return request
