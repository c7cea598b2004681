"""A request's repeated message field read straight from its bytes (the server's).

The server's format cache recognises what an agent sent before by the bytes it
arrived as: each message's own (a chat turn), and the run of messages the
conversation started with (the walk over them). This walks just enough of the
protobuf wire format to find them: tags and lengths, never the content.
"""

from __future__ import annotations

__all__ = ["WireMessages", "field_bytes", "read_varint", "skip_field", "varint_bytes"]


def read_varint(data: bytes | memoryview, position: int) -> tuple[int, int]:
    """The varint at `position` and the position after it."""
    value = shift = 0
    while True:
        byte = data[position]  # IndexError past the end: not a message
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


_ONE_BYTE = [bytes((value,)) for value in range(0x80)]


def varint_bytes(value: int) -> bytes:
    """`value` as a varint (a negative int64 as its two's complement, as protobuf writes it)."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def skip_field(data: bytes, tag: int, position: int) -> int:
    """Past the value of the field `tag` that starts at `position` (IndexError
    if `data` ends first). A group (wire type 3) is skipped to its end: no
    proto3 schema has one, but a decoder keeps one it does not know as an
    unknown field, so a message that decoded may hold one."""
    wire = tag & 7
    if wire == 0:
        return read_varint(data, position)[1]
    if wire == 1:
        return position + 8
    if wire == 2:
        length, position = read_varint(data, position)
        return position + length
    if wire == 5:
        return position + 4
    if wire == 3:
        end = tag + 1  # the same field number, wire type 4
        while True:
            inner, position = read_varint(data, position)
            if inner == end:
                return position
            position = skip_field(data, inner, position)
    raise IndexError(f"wire type {wire} outside a group")


def field_bytes(data: bytes, number: int) -> bytes:
    """The bytes of message field `number` in the serialized message `data`.

    A field that occurs several times is their concatenation, which protobuf
    reads as the occurrences merged, as it reads the field itself. `data`
    must be a message that decoded (anything else may raise IndexError).
    """
    parts = []
    position = 0
    while position < len(data):
        key, position = read_varint(data, position)
        if key == (number << 3) | 2:
            size, position = read_varint(data, position)
            parts.append(data[position : position + size])
            position += size
        else:
            position = skip_field(data, key, position)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class WireMessages:
    """The entries of length-delimited field `number` of the serialized
    message `data` (a repeated message field), found lazily.

    `WireMessages.of` walks to the first entry (`first`, at `start`); `walk`
    then takes the rest, skipping a run of entries whose bytes are already
    known. After it, `messages` holds the bytes of each entry after the skipped
    ones, and `run()` the bytes of all entries with their framing, when they
    follow one another (as every protobuf encoder writes a repeated field).
    """

    __slots__ = ("_data", "_end", "_number", "_tag", "first", "messages", "skipped", "start")

    def __init__(self, data: bytes, number: int) -> None:
        self._data = data
        self._number = number
        # The one-byte tag of the field, when it has one (numbers below 16):
        # read inline, as are lengths of up to two varint bytes.
        self._tag = (number << 3) | 2 if number < 16 else -1
        self.start = -1
        self.first: bytes | None = None
        self.messages: list[bytes] = []
        self.skipped = 0
        self._end = -1  # where the run of entries from `start` ends; -1: not one run

    @classmethod
    def of(cls, data: bytes, number: int) -> WireMessages | None:
        """Walk to the first entry; None if `data` does not walk cleanly,
        which a message that decoded always does."""
        wire = cls(data, number)
        try:
            position = 0
            while position < len(data):
                entry = wire._entry(position)
                if entry is not None:
                    start, end = entry
                    wire.start = position
                    wire.first = data[start:end]
                    return wire
                position = wire._skip(position)
        except IndexError:
            return None
        return wire if position == len(data) else None

    def __len__(self) -> int:
        return self.skipped + len(self.messages)

    def _entry(self, position: int) -> tuple[int, int] | None:
        """(payload start, end) if an entry of the field starts at `position`."""
        data = self._data
        if data[position] == self._tag:
            length = data[position + 1]
            if length < 0x80:
                return position + 2, position + 2 + length
            if data[position + 2] < 0x80:
                length = (length & 0x7F) | (data[position + 2] << 7)
                return position + 3, position + 3 + length
        tag, after = read_varint(data, position)
        if tag != (self._number << 3) | 2:
            return None
        length, after = read_varint(data, after)
        return after, after + length

    def _skip(self, position: int) -> int:
        """Past the field (not an entry) starting at `position`."""
        tag, position = read_varint(self._data, position)
        return skip_field(self._data, tag, position)

    def known_run(self, run: bytes) -> bool:
        """Whether the entries begin with the bytes `run` (a run walked before)."""
        return self.first is not None and self._data.startswith(run, self.start)

    def walk(self, skip_bytes: int = 0, skip_count: int = 0) -> bool:
        """Take every entry, the first `skip_count` ones (`skip_bytes` from
        `start`, a run known to hold them) without reading them; whether the
        rest of `data` walks cleanly."""
        data, end = self._data, len(self._data)
        messages: list[bytes] = []
        self.messages = messages
        self.skipped = skip_count
        if self.first is None:
            return True
        position = self.start + skip_bytes
        run_end = position  # -1 once another field splits the entries
        try:
            while position < end:
                entry = self._entry(position)
                if entry is None:
                    position = self._skip(position)
                    continue
                if run_end != position:
                    run_end = -1
                payload, position = entry
                if run_end >= 0:
                    run_end = position
                messages.append(data[payload:position])
        except IndexError:
            return False
        self._end = run_end
        return position == end

    def run(self) -> bytes | None:
        """The bytes of all entries with their framing, when they are one run."""
        if self.first is None or self._end < 0:
            return None
        return self._data[self.start : self._end]
