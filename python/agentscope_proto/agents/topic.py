"""A served agent as a participant of a hub topic: AgentScope's `MsgHub`
across processes.

The topic feeds one session, `topic:<topic>`, which is never dropped.
Every message published to the topic by someone else is given to that
session's agent, in publish order: as observed messages (1.x `MsgHub`: every
participant observes every message), or as the input of a reply when the
message is addressed to it (`AgentConfig.reply_to`; 2.x's group-chat
channels answer only when @mentioned). Whatever the agent replies in that
session, on the hub's initiative or to a caller of the AgentService, is
published to the topic once the reply ends, without its thinking (1.x's
`MsgHub` strips it too). Its own messages (by its name) come back from the
topic and are skipped: an agent never reacts to itself.

One turn at a time: messages that arrive while a reply runs wait on the
topic, and the next turn takes all of them together (one reply, if any is
addressed to the agent). A reply on the hub's initiative has nobody to ask:
a tool call that needs confirmation is denied, an external one interrupted,
and the agent goes on as 2.x's own agent does after a denial. While a
caller's reply in the session waits for its answer, the topic waits too.

Progress is the offset of the last message handled; with a Redis hub it is
kept in Redis (`agentscope:agent:{<topic>}:<agent name>`, the topic's hash
tag), so a restarted agent goes on after it: nothing missed, nothing answered
twice, except a turn whose reply was published just before the process died
and recorded its progress (at least once). With the `memory` state store a
restarted agent's memory starts empty, like every session's after a restart.

Replicas (a Redis hub and a durable state store, `--state redis://`): the
replicas of one agent on a topic are one participant. One replica at a time
follows the topic: the one holding the agent's follower lease on it
(`agentscope:follower:{<topic>}:<agent name>`, beside the progress, renewed
every third of `lease_seconds`); the others try for it as often and take
over within `lease_seconds` of its holder dying (at once when it stops: it
gives the lease up), going on after the progress stored. The progress is
saved only by the lease's holder (one script, one slot), so a replica that
lost the lease while paused stops after its turn and records nothing. The
topic's session is then a session of the store like any other: each turn
(the follower's, or a caller's in `topic:<topic>` on any replica) takes the
session's own lease, loads the state another replica saved since, and saves
the agent's state after, so the agent remembers the conversation across
replicas and restarts; a reply is published by the replica that ran it.
A topic's session whose hub is the process's own (`memory`) stays in the
process (`Session.local`): its topic is no other replica's.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from typing import Any, Protocol

from google.protobuf.message import DecodeError

from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.agent.v1 import events_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import Msg, Role
from ..errors import (
    AgentReplyError,
    FormatError,
    HubUnavailableError,
    LimitExceededError,
    MessageFormatError,
    OffsetOutOfRangeError,
    SessionStateError,
    StateUnavailableError,
)
from ..hub.store import Entry, HubConfig, HubStore, Subscription, redacted_url
from ..message.helpers import get_text_content
from ..service._rpc import log_failure
from .config import AgentConfig, topic_session
from .hosting import ReplyInputs
from .replies import ASKS
from .sessions import Session, Sessions

__all__ = ["TopicParticipant", "join_topic"]

logger = logging.getLogger("agentscope_proto.agents")

# Waits between attempts while the hub's store is unreachable: doubling.
_BACKOFF = (0.05, 5.0)
# The blocks a participant takes from others' messages: what a speaker said
# (2.x's TeamPipeline passes a member's text and data on, nothing else);
# tool calls, their results and thinking are the speaker's own business.
_SAID = frozenset({"text", "image", "audio", "video", "data"})
_GO_ON = ReplyInputs(None, None, None)
# The longest wait between a replica's tries for the lead of its topic.
_TRY_S = 0.25


class _Cursor(Protocol):
    """Where a participant keeps the offset of the last message it handled."""

    async def load(self) -> str: ...

    async def save(self, offset: str) -> bool:
        """Record `offset`; False if this replica may not (it lost the lead)."""
        ...

    async def close(self) -> None: ...


class _Lead(_Cursor, Protocol):
    """A cursor shared by replicas, and the lease of the one following the
    topic (`_RedisLead`)."""

    async def take(self) -> bool:
        """Take the lease if it is free (or this replica's): whether it is."""
        ...

    async def hold(self) -> bool:
        """Extend this replica's lease: False if it ran out meanwhile."""
        ...

    async def give_up(self) -> None: ...


class _Unkept:
    """The memory hub's: a restart empties the topic too, so nothing is kept."""

    async def load(self) -> str:
        return ""

    async def save(self, offset: str) -> bool:
        return True

    async def close(self) -> None:
        return None


class _RedisCursor:
    """A key beside the topic's stream, in the same slot (its hash tag)."""

    def __init__(self, client: Any, url: str, topic: str, name: str) -> None:
        from redis.exceptions import RedisError

        self._client = client
        self._errors = (RedisError, OSError)
        self._url = redacted_url(url)
        self.key = f"agentscope:agent:{{{topic}}}:{name}"

    @classmethod
    async def connect(cls, url: str, *args: Any) -> Any:
        """One on its own connection to the Redis `url` names (a Redis
        Cluster's client when it is one: the keys are on their slot's node)."""
        from redis.exceptions import RedisError

        from .._redis import connect_redis

        try:
            client = await connect_redis(url)
        except (RedisError, OSError) as exc:
            raise HubUnavailableError(f"cannot reach {redacted_url(url)}: {exc}") from None
        return cls(client, url, *args)

    async def _call(self, command: Any) -> Any:
        try:
            return await command
        except self._errors as exc:
            raise HubUnavailableError(f"cannot reach {self._url}: {exc}") from None

    async def load(self) -> str:
        value = await self._call(self._client.get(self.key))
        return value.decode() if value else ""

    async def save(self, offset: str) -> bool:
        await self._call(self._client.set(self.key, offset))
        return True

    async def close(self) -> None:
        await self._client.aclose()


# KEYS: the follower lease. ARGV: owner, ttl ms. 1 if the owner holds it now.
_TAKE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
# Renewal never takes a free lease: another replica may have followed (and
# moved the progress) since this one's ran out.
_HOLD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_GIVE_UP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
# KEYS: the lease, the progress. ARGV: owner, offset.
_SAVE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2])
  return 1
end
return 0
"""


class _RedisLead(_RedisCursor):
    """The progress of replicas of one agent, and the lease of the one that
    follows the topic (a key in the same slot: the progress is saved by the
    lease's holder alone, in one script)."""

    def __init__(self, client: Any, url: str, topic: str, name: str, lease_seconds: float) -> None:
        super().__init__(client, url, topic, name)
        self.lease = f"agentscope:follower:{{{topic}}}:{name}"
        self._owner = uuid.uuid4().hex
        self._ttl_ms = round(lease_seconds * 1000)
        self._take = self._client.register_script(_TAKE)
        self._hold = self._client.register_script(_HOLD)
        self._give_up = self._client.register_script(_GIVE_UP)
        self._save = self._client.register_script(_SAVE)

    async def take(self) -> bool:
        return bool(await self._call(self._take([self.lease], [self._owner, self._ttl_ms])))

    async def hold(self) -> bool:
        return bool(await self._call(self._hold([self.lease], [self._owner, self._ttl_ms])))

    async def give_up(self) -> None:
        await self._call(self._give_up([self.lease], [self._owner]))

    async def save(self, offset: str) -> bool:
        return bool(await self._call(self._save([self.lease, self.key], [self._owner, offset])))


async def _open_cursor(config: HubConfig, topic: str, name: str) -> _Cursor:
    if config.url == "memory":
        return _Unkept()
    cursor: _Cursor = await _RedisCursor.connect(config.url, topic, name)
    return cursor


def _blocks_kept(msg: Msg, keep: Any) -> Msg:
    """A copy of `msg` with only the blocks `keep(kind)` keeps."""
    copy = Msg()
    copy.CopyFrom(msg)
    if msg.WhichOneof("content") == "blocks":
        del copy.blocks.items[:]
        copy.blocks.items.extend(b for b in msg.blocks.items if keep(b.WhichOneof("block")))
    return copy


class TopicParticipant:
    """The agents of `sessions` in `topic` on `store`: see the module doc.
    `start()` joins (live once it returns, if this replica follows the
    topic), `close()` leaves. With a `lead`, it follows the topic only while
    it holds the lead's lease (its replicas are one participant)."""

    def __init__(
        self,
        sessions: Sessions,
        name: str,
        store: HubStore,
        topic: str,
        reply_to: str,
        cursor: _Cursor,
        lead: _Lead | None = None,
    ) -> None:
        self.sessions = sessions
        self.name = name
        self.store = store
        self.topic = topic
        self.reply_to = reply_to
        self._cursor = cursor
        self._lead = lead
        # How often a follower renews its lease, and how often the others try
        # for it: often enough that a follower that stops (and gives it up)
        # is replaced at once, whatever the lease.
        self._renewals = sessions.config.lease_seconds / 3
        self._tries = min(self._renewals, _TRY_S)
        self._mention = re.compile(rf"(?<!\w)@{re.escape(name)}(?!\w)", re.IGNORECASE)
        # The offset of the last message handled ("": none yet).
        self.after = ""
        self.session: Session | None = None
        # Whether this replica follows the topic (always, without a lead).
        self.leading = lead is None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # Whether a turn of the topic's messages runs (`_handle`).
        self._turning = False

    async def start(self) -> None:
        """Open the topic's session and follow the topic after the offset
        kept from a previous run (from now on without one); with a lead,
        only if no other replica follows it (else once it stops)."""
        session = await self.sessions.open(topic_session(self.topic), create=True)
        session.publish = self._publish
        session.local = self._lead is None
        self.session = session
        if self._lead is None:
            self.after = await self._cursor.load()
            self._task = asyncio.create_task(self._follow(await self._begin()))
        else:
            self._task = asyncio.create_task(self._lead_on(await self._try_lead()))
        logger.info(
            "agent %r joined topic %r (session %r, replying to %s)%s",
            self.name,
            self.topic,
            session.id,
            self.reply_to,
            "" if self.leading else ": another replica follows it",
        )

    async def _begin(self) -> Subscription:
        """Subscribe after the progress loaded (from now without one)."""
        resumed = bool(self.after)
        subscription = await self._subscribe()
        logger.info(
            "agent %r follows topic %r %s %s",
            self.name,
            self.topic,
            "after" if resumed else "from",
            self.after if resumed else "now",
        )
        return subscription

    async def close(self) -> None:
        """Stop following the topic: a reply running on the hub's initiative
        is interrupted and neither published nor saved, its turn left to the
        next run (or the replica taking over: the lease is given up)."""
        if self._closed:
            return
        self._closed = True
        if self._turning and self.session is not None and self.sessions.keeper.durable:
            # The turn is left to the replica taking over, as the progress
            # is: its agent, interrupted, must not be saved as the session's.
            self.session.stored = -1
        if self._task is not None:
            # Again until it ends: redis-py can swallow a cancellation that
            # lands as a command starts (saving the progress, say), and the
            # task would then follow the topic on (it stops at its next turn).
            while not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=1)
            await asyncio.gather(self._task, return_exceptions=True)
        await self._cursor.close()

    async def _try_lead(self) -> Subscription | None:
        """Take the lead if it is free: the topic followed after the stored
        progress; None while another replica follows it."""
        assert self._lead is not None
        if not await self._lead.take():
            return None
        self.leading = True
        self.after = await self._lead.load()
        stored = bool(self.after)
        subscription = await self._begin()
        if not stored:
            # Recorded at once: a replica taking over goes on from here, not
            # from its own "now" (which would skip what came in between).
            await self._save()
        return subscription

    async def _lead_on(self, subscription: Subscription | None) -> None:
        """Follow the topic whenever this replica leads it, for as long as it
        runs; the lease given up as it stops, so that another takes over at once."""
        try:
            while not self._closed:
                if subscription is None:
                    subscription = await self._elected()
                holding = asyncio.create_task(self._hold())
                try:
                    await self._follow(subscription)
                finally:
                    holding.cancel()
                await self._give_up()
                subscription = None
        finally:
            await self._give_up()

    async def _elected(self) -> Subscription:
        """Wait for the lead (another replica follows the topic until it
        stops, or dies and its lease runs out)."""
        while True:
            try:
                subscription = await self._try_lead()
            except HubUnavailableError as exc:
                logger.warning("agent %r cannot try for topic %r: %s", self.name, self.topic, exc)
                subscription = None
            if subscription is not None:
                return subscription
            await asyncio.sleep(self._tries)

    async def _hold(self) -> None:
        """Renew the lease while following; once it ran out (this replica
        was paused, or its hub unreachable, for a whole lease), stop at the
        next turn: another replica may follow the topic now."""
        assert self._lead is not None
        while True:
            await asyncio.sleep(self._renewals)
            try:
                if await self._lead.hold():
                    continue
            except HubUnavailableError as exc:
                logger.warning("agent %r cannot renew its lease: %s", self.name, exc)
                continue
            logger.warning(
                "agent %r no longer leads topic %r: its lease ran out", self.name, self.topic
            )
            self.leading = False
            return

    async def _give_up(self) -> None:
        assert self._lead is not None
        self.leading = False
        try:
            await self._lead.give_up()
        except HubUnavailableError as exc:
            logger.warning("agent %r could not give its lease up: %s", self.name, exc)

    async def _subscribe(self) -> Subscription:
        try:
            subscription = await self.store.subscribe(self.topic, self.after)
        except OffsetOutOfRangeError as exc:
            logger.error(
                "agent %r cannot resume topic %r after %s (%s): going on from now",
                self.name,
                self.topic,
                self.after,
                exc.reason,
            )
            subscription = await self.store.subscribe(self.topic, "")
        self.after = subscription.after
        return subscription

    async def _follow(self, subscription: Subscription | None) -> None:
        """Take the topic's messages turn by turn, for as long as it runs
        and this replica leads it."""
        wait = _BACKOFF[0]
        while not self._closed and self.leading:
            try:
                if subscription is None:
                    subscription = await self._subscribe()
                entries = await subscription.next()
            except HubUnavailableError as exc:
                logger.warning(
                    "agent %r lost topic %r (%s); resuming after %s",
                    self.name,
                    self.topic,
                    exc,
                    self.after,
                )
                subscription = None
                await asyncio.sleep(wait)
                wait = min(wait * 2, _BACKOFF[1])
                continue
            except OffsetOutOfRangeError as exc:
                logger.error(
                    "agent %r fell behind topic %r (%s): going on from now",
                    self.name,
                    self.topic,
                    exc.reason,
                )
                subscription, self.after = None, ""
                continue
            wait = _BACKOFF[0]
            if not self.leading:
                return  # another replica follows the topic now
            await self._handle(entries)
            self.after = entries[-1][0].decode()
            await self._save()

    async def _handle(self, entries: list[Entry]) -> None:
        """A turn of `entries`; again while the state store is unreachable
        (skipping it would lose the messages from the agent's memory)."""
        wait = _BACKOFF[0]
        while True:
            try:
                self._turning = True
                await self._turn(entries)
                return
            except StateUnavailableError as exc:
                logger.warning("agent %r waits for its state store: %s", self.name, exc)
            except Exception as exc:  # a bug: logged, and the topic goes on
                log_failure(f"agent {self.name!r}'s turn on topic {self.topic!r}", exc)
                return
            finally:
                self._turning = False
            await asyncio.sleep(wait)
            wait = min(wait * 2, _BACKOFF[1])

    async def _save(self) -> None:
        try:
            if not await self._cursor.save(self.after):
                logger.warning(
                    "agent %r lost topic %r to another replica: its progress is theirs",
                    self.name,
                    self.topic,
                )
                self.leading = False
        except HubUnavailableError as exc:
            # The next turn saves again; a restart before it redoes this one.
            logger.warning("agent %r could not record its progress: %s", self.name, exc)

    async def _read(self, offset: bytes, data: bytes) -> tuple[Msg, Any] | None:
        """A message of someone else's and what the agent takes of it, or
        None: its own, nothing it takes, or one it refuses (logged), its
        media refused included (`media.py`)."""
        try:
            msg = Msg.FromString(data)
        except DecodeError:
            logger.warning("topic %r: the message at %s does not decode", self.topic, offset)
            return None
        if msg.HasField("name") and msg.name == self.name:
            return None
        said = _blocks_kept(msg, _SAID.__contains__)
        if said.WhichOneof("content") == "blocks" and not said.blocks.items:
            return None
        try:
            (native,) = await self.sessions.read_msgs([said], "msg")
        except (MessageFormatError, FormatError, LimitExceededError) as exc:
            logger.warning(
                "agent %r skips the message at %s of topic %r: %s",
                self.name,
                offset.decode(),
                self.topic,
                exc,
            )
            return None
        return msg, native

    def _addressed(self, msg: Msg) -> bool:
        """Whether the agent answers `msg` on its own (`reply_to`)."""
        if self.reply_to == "none":
            return False
        if self.reply_to == "users" and msg.role == Role.ROLE_USER:
            return True
        return self._mention.search(get_text_content(msg, " ") or "") is not None

    def _answered(self) -> bool:
        """Whether the session waits for no answer (the topic waits while it does)."""
        assert self.session is not None
        try:
            self.sessions.hosting.check(self.session.agent, _GO_ON)
        except SessionStateError:
            return False
        return True

    async def _turn(self, entries: list[Entry]) -> None:
        read = [item for item in [await self._read(*entry) for entry in entries] if item]
        if not read:
            return
        natives = [native for _, native in read]
        if any(self._addressed(msg) for msg, _ in read):
            await self._reply(ReplyInputs(natives, None, None))
            return
        while not await self._observed(natives):
            await self._until_answered()

    async def _observed(self, natives: list[Any]) -> bool:
        """Whether the agent observed `natives` in the session's turn: not
        while it waits for an answer (the topic waits too)."""
        assert self.session is not None
        async with self.session.lock, self.sessions.keeper.turn(self.session):
            if not self._answered():
                return False
            await self.sessions.hosting.observe(self.session.agent, natives)
            return True

    async def _until_answered(self) -> None:
        """Wait for the session's question to be answered: here, its reply
        ends; on another replica, the state stored changes (then the next
        turn loads it and sees)."""
        session = self.session
        assert session is not None
        if session.local or not self.sessions.keeper.durable:
            async with session.turned:
                await session.turned.wait_for(self._answered)
            return
        seen = session.stored
        while await self.sessions.keeper.store.version(session.id) == seen:
            await asyncio.sleep(self._tries)

    async def _reply(self, first: ReplyInputs) -> None:
        """Reply to a turn; the reply publishes itself once it ends."""
        assert self.session is not None
        inputs: ReplyInputs | None = first
        while inputs is not None:
            question = None
            try:
                reply = self.sessions.start(self.session, inputs, counted=False)
                async for response in reply.responses():
                    if response.event.WhichOneof("event") in ASKS:
                        question = response.event
            except SessionStateError:
                if inputs.answer is not None:
                    return  # a caller answered in between: the reply is theirs now
                # A caller's reply asked in between: its answer first.
                await self._until_answered()
                continue
            except AgentReplyError:
                return  # logged by its hosting, and published with its error
            inputs = None if question is None else self._refusal(question)

    def _refusal(self, question: pb.AgentEvent) -> ReplyInputs:
        """The answer nobody on the topic could give: no to each
        confirmation, an interrupt for external tools."""
        assert self.session is not None
        kind = question.WhichOneof("event")
        asked = getattr(question, kind or "")
        request = service_pb.ReplyRequest(session_id=self.session.id)
        if kind == "require_user_confirm":
            request.user_confirm_result.reply_id = asked.reply_id
            for call in asked.tool_calls:
                request.user_confirm_result.confirm_results.add(confirmed=False, tool_call=call)
        else:
            request.user_interrupt.reply_id = asked.reply_id
        logger.info(
            "agent %r on topic %r: nobody to ask about %s, so %s",
            self.name,
            self.topic,
            ", ".join(call.name for call in asked.tool_calls),
            "denied" if kind == "require_user_confirm" else "interrupted",
        )
        return self.sessions.hosting.read_inputs(request)

    async def _publish(self, msg: Msg) -> None:
        """Publish a finished reply of the session, without its thinking;
        while the store is unreachable, again and again."""
        data = _blocks_kept(msg, lambda kind: kind != "thinking").SerializeToString()
        wait = _BACKOFF[0]
        while not self._closed:
            try:
                await self.store.publish(self.topic, data)
                return
            except HubUnavailableError as exc:
                logger.warning("agent %r cannot publish to %r yet: %s", self.name, self.topic, exc)
                await asyncio.sleep(wait)
                wait = min(wait * 2, _BACKOFF[1])
        logger.info("agent %r's reply %r is not published: it left the topic", self.name, msg.id)


async def join_topic(
    sessions: Sessions, name: str, store: HubStore, hub: HubConfig, config: AgentConfig
) -> TopicParticipant:
    """The agent `name` of `sessions` in `config.topic` on `store` (the hub
    `hub` configures), following it once this returns (or, with replicas on
    a Redis hub and a durable state store, once no other replica does)."""
    if config.topic is None:
        raise ValueError("join_topic needs AgentConfig.topic")
    lead: _Lead | None = None
    cursor: _Cursor
    if hub.url != "memory" and sessions.keeper.durable:
        lead = await _RedisLead.connect(hub.url, config.topic, name, config.lease_seconds)
        cursor = lead
    else:
        cursor = await _open_cursor(hub, config.topic, name)
    participant = TopicParticipant(
        sessions, name, store, config.topic, config.reply_to, cursor, lead
    )
    try:
        await participant.start()
    except BaseException:
        await cursor.close()
        raise
    return participant
