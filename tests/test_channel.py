"""The clients' channel target: one target, or several replicas' IP
`host:port`s in one channel (`_channel.channel_target`)."""

from __future__ import annotations

import pytest

from agentscope_proto._channel import channel_target


def test_one_target_is_as_given() -> None:
    assert channel_target("dns:///agents.internal:50052") == "dns:///agents.internal:50052"


def test_several_ip_targets_are_one_channel() -> None:
    assert channel_target(["127.0.0.1:1", "10.0.0.2:2"]) == "ipv4:127.0.0.1:1,10.0.0.2:2"
    assert channel_target(["[::1]:1", "[fe80::1]:2"]) == "ipv6:[::1]:1,[fe80::1]:2"


@pytest.mark.parametrize(
    ("targets", "named"),
    [
        ([], "at least one"),
        (["agents.internal:50052", "127.0.0.1:1"], "'agents.internal:50052'"),
        (["127.0.0.1:1", "[::1]:2"], "IPv4 or all IPv6"),
        (["127.0.0.1"], "'127.0.0.1'"),
    ],
)
def test_bad_target_lists_are_refused_naming_why(targets: list[str], named: str) -> None:
    with pytest.raises(ValueError, match="target") as info:
        channel_target(targets)
    assert named in str(info.value)
