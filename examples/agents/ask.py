"""Ask a served agent through `RemoteAgent`: `python ask.py HOST:PORT|URL "question" [SESSION]`.

HOST:PORT may be several, comma-separated (IP addresses: replicas of one
agent): the first is asked, and the reply is taken up on the next when it
stops answering. The reply streams as AgentScope events; when the agent asks to run a tool,
this process asks you, and answers the agent with your verdict. SESSION is
the remote session to ask in (`topic:room`: the agent's hub topic, where its
reply is published too); a new one by default. A failure (no agent there, a
reply that failed) is one line on stderr and a non-zero exit.
"""

import asyncio
import sys

from agentscope.event import (
    ConfirmResult,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    UserConfirmResultEvent,
)
from agentscope.message import UserMsg

from agentscope_proto.agents import RemoteAgent
from agentscope_proto.errors import AgentScopeProtoError


def confirm(event: RequireUserConfirmEvent) -> UserConfirmResultEvent:
    """Ask the user about each tool call the agent wants to make."""
    results = []
    for call in event.tool_calls:
        try:
            verdict = input(f"\nAllow {call.name}({call.input})? [y/N] ").strip().lower()
        except EOFError:  # no one to ask: deny
            verdict = "n"
        results.append(ConfirmResult(confirmed=verdict == "y", tool_call=call))
    return UserConfirmResultEvent(reply_id=event.reply_id, confirm_results=results)


async def main(target: str, question: str, session: str | None = None) -> None:
    targets = target.split(",")
    async with RemoteAgent(targets if len(targets) > 1 else target, session_id=session) as agent:
        inputs = UserMsg("user", question)
        while inputs is not None:
            answer = None
            async for event in agent.reply_stream(inputs):
                if isinstance(event, TextBlockDeltaEvent):
                    print(event.delta, end="", flush=True)
                elif isinstance(event, RequireUserConfirmEvent):
                    answer = confirm(event)
                else:
                    print(f"\n[{event.type}]", flush=True)
            inputs = answer
        print()


if __name__ == "__main__":
    if not 3 <= len(sys.argv) <= 4:
        sys.exit('usage: python ask.py HOST:PORT[,HOST:PORT...]|URL "question" [SESSION]')
    try:
        asyncio.run(main(*sys.argv[1:4]))
    except AgentScopeProtoError as error:  # the agent's or the server's: it says what failed
        sys.exit(f"ask.py: {error}")
    except KeyboardInterrupt:
        sys.exit(130)
