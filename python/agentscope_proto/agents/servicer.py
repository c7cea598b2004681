"""The AgentService servicer: translates RPCs to sessions and their agent.

Decoding, deadlines and the error path are `service/_rpc.py`'s, as for the
FormatterService; sessions and replies are `sessions.py`'s; what the agent
takes and gives is its hosting's (`hosting/`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from .._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from .._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from ..service._rpc import Context, decoded, rpc_errors
from .sessions import Sessions

__all__ = ["SERVICE_NAME", "AgentServicer"]

SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["AgentService"].full_name


class AgentServicer(pb_grpc.AgentServiceServicer):
    """Serves one kind of agent, one agent per session."""

    def __init__(self, sessions: Sessions, description: pb.DescribeResponse) -> None:
        self.sessions = sessions
        self._description = description

    @property
    def description(self) -> pb.DescribeResponse:
        """What `Describe` answers (also what an A2A agent card says)."""
        return self._description

    async def Reply(
        self, request: pb.ReplyRequest, context: Context
    ) -> AsyncIterator[pb.ReplyResponse]:
        async with rpc_errors("Reply", context):
            request = decoded(request)
            reply = await self.sessions.begin(request)
            async for response in reply.responses():
                yield response

    async def Resume(
        self, request: pb.ResumeRequest, context: Context
    ) -> AsyncIterator[pb.ReplyResponse]:
        async with rpc_errors("Resume", context):
            request = decoded(request)
            async for response in self.sessions.resume(request):
                yield response

    async def Observe(self, request: pb.ObserveRequest, context: Context) -> pb.ObserveResponse:
        async with rpc_errors("Observe", context):
            request = decoded(request)
            session = await self.sessions.observe_request(request)
            return pb.ObserveResponse(session_id=session.id)
        raise AssertionError("unreachable: rpc_errors aborts")  # pragma: no cover

    async def Describe(self, request: pb.DescribeRequest, context: Context) -> pb.DescribeResponse:
        return self._description
