"""A2A tasks in the served agent's Redis (`serve-agent --state redis://...`),
so that `GetTask` and `ListTasks` answer on every replica sharing it.

An a2a-sdk `TaskStore`: each task is its protobuf bytes under
`agentscope:a2a:{<agent>/<owner>}:task:<id>`, with the owner's task ids in
`...:tasks` and its finished ones, by when they finished, in `...:finished`;
the braces keep an owner's keys in one slot of a Redis Cluster (the agent
and owner escaped by `_redis.hash_tag`: no other pair's keys are the
same). As in memory, an owner keeps at most `max_tasks` finished tasks, the
oldest forgotten first (one script does the save and the trim). `ListTasks` reads
the owner's tasks and filters and pages them as a2a-sdk's in-memory store
does, so both answer alike.
"""

from __future__ import annotations

import time
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState
from redis.exceptions import RedisError

from .._redis import hash_tag
from ..agents.state.redis_store import unavailable

__all__ = ["RedisTaskStore"]

# Task states that end a task: such a task counts against `max_tasks`.
FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
# KEYS: the task, the owner's tasks, its finished ones. ARGV: the task's id,
# its bytes, whether it is finished, when (ms), the owner's prefix, max_tasks.
_SAVE = """
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[6])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[3], over)
  for i = 1, #popped, 2 do
    redis.call('DEL', ARGV[5] .. popped[i])
    redis.call('SREM', KEYS[2], popped[i])
  end
end
return 1
"""


class RedisTaskStore(TaskStore):
    """a2a-sdk's `TaskStore` on the state store's Redis (see the module doc)."""

    def __init__(self, client: Any, agent: str, max_tasks: int) -> None:
        self._client = client
        self._agent = agent
        self._max = max_tasks
        self._save = client.register_script(_SAVE)

    def _prefix(self, context: ServerCallContext) -> str:
        owner = resolve_user_scope(context)
        return f"agentscope:a2a:{hash_tag(self._agent, owner)}"

    async def save(self, task: Task, context: ServerCallContext) -> None:
        prefix = self._prefix(context)
        finished = "1" if task.status.state in FINISHED else "0"
        keys = [f"{prefix}:task:{task.id}", f"{prefix}:tasks", f"{prefix}:finished"]
        args = [task.id, task.SerializeToString(), finished, time.time_ns() // 1_000_000]
        try:
            await self._save(keys=keys, args=[*args, f"{prefix}:task:", self._max])
        except RedisError as exc:
            raise unavailable(exc) from None

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        try:
            data = await self._client.get(f"{self._prefix(context)}:task:{task_id}")
        except RedisError as exc:
            raise unavailable(exc) from None
        return None if data is None else Task.FromString(data)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        prefix = self._prefix(context)
        try:
            ids = sorted(
                member.decode() for member in await self._client.smembers(f"{prefix}:tasks")
            )
            found = await self._client.mget([f"{prefix}:task:{i}" for i in ids]) if ids else []
        except RedisError as exc:
            raise unavailable(exc) from None
        # a2a-sdk's own filtering and paging, over the owner's tasks.
        listing = InMemoryTaskStore(owner_resolver=lambda _: "", use_copying=False)
        for data in found:
            if data is not None:
                await listing.save(Task.FromString(data), context)
        return await listing.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        prefix = self._prefix(context)
        try:
            await self._client.delete(f"{prefix}:task:{task_id}")
            await self._client.srem(f"{prefix}:tasks", task_id)
            await self._client.zrem(f"{prefix}:finished", task_id)
        except RedisError as exc:
            raise unavailable(exc) from None
