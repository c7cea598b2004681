"""URLs normalised exactly as AgentScope 2.x's `URLSource.url` (pydantic's `AnyUrl`) does.

pydantic-core parses an `AnyUrl` with the Rust `url` crate (the WHATWG URL Standard: no base
URL, syntax violations ignored) and `str(url)` is that crate's serialisation: scheme and
special hosts lower-cased, default ports dropped, dot segments resolved, characters outside
each component's set percent-encoded, IPv4 numbers and IPv6 addresses canonicalised. This
module is a port of that parser, checked against tests/golden/agentscope2/urls.json (made by
the real pydantic). It is pure: no I/O, no state.

`normalize_url` raises `ValueError("invalid URL: <reason>")` where pydantic refuses, the
reason being the crate's own ("empty host", "invalid port number", ...). A host of a special
scheme (http, https, ws, wss, ftp, file) that holds non-ASCII text (after percent-decoding) or
a punycode `xn--` label needs UTS #46 processing (Unicode mapping tables, punycode validation,
bidi rules), which Python's standard library does not have (`encodings.idna` is IDNA 2003
and gives other answers): such input raises `UnsupportedURLError`, a `ValueError`, rather
than a guess.
"""

from __future__ import annotations

import unicodedata

__all__ = ["UnsupportedURLError", "normalize_url"]


class UnsupportedURLError(ValueError):
    """A URL pydantic may accept whose normalisation this module does not reproduce."""


# Percent-encode sets of the crate's version in pydantic-core (bytes >= 0x80 always encode).
_CONTROLS = frozenset([*range(0x20), 0x7F])
_FRAGMENT = _CONTROLS | frozenset(b' "<>`')
_PATH = _FRAGMENT | frozenset(b"#?{}")
_USERINFO = _PATH | frozenset(b"/:;=@[\\]^|")
_QUERY = _CONTROLS | frozenset(b' "#<>')
_SPECIAL_QUERY = _QUERY | frozenset(b"'")

_TAB_OR_NEWLINE = "\t\n\r"
_C0_CONTROL_OR_SPACE = "".join(map(chr, range(0x21)))
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_HEX = "0123456789abcdefABCDEF"
_DIGITS = "0123456789"
# Forbidden in a special host after percent-decoding (the URL deny list of UTS #46 there).
_FORBIDDEN_DOMAIN = frozenset(chr(c) for c in [*range(0x21), 0x7F]) | frozenset("%#/:<>?@[\\]^|")
# Forbidden in the opaque host of a non-special scheme.
_FORBIDDEN_OPAQUE = frozenset("\0\t\n\r #/:<>?@[\\]^|")
_DOUBLE_DOT = frozenset(
    ["..", "%2e%2e", "%2e%2E", "%2E%2e", "%2E%2E", "%2e.", "%2E.", ".%2e", ".%2E"]
)
_SINGLE_DOT = frozenset([".", "%2e", "%2E"])

_FILE = "file"
_SPECIAL = "special"
_OTHER = "other"


def normalize_url(text: str) -> str:
    """`str(AnyUrl(text))` as pydantic gives it; `ValueError` where pydantic refuses."""
    if not isinstance(text, str):
        raise TypeError(f"a URL is a str, not {type(text).__name__}")
    if text == "":
        raise _invalid("input is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("invalid URL: not valid Unicode (a lone surrogate)") from None
    return _Parser(text.strip(_C0_CONTROL_OR_SPACE)).parse()


def _invalid(reason: str) -> ValueError:
    return ValueError(f"invalid URL: {reason}")


def _encode(text: str, encode_set: frozenset[int]) -> str:
    return "".join(
        f"%{byte:02X}" if byte >= 0x80 or byte in encode_set else chr(byte)
        for byte in text.encode("utf-8")
    )


def _is_ascii_alpha(char: str) -> bool:
    return "a" <= char <= "z" or "A" <= char <= "Z"


def _starts_with_windows_drive_letter(text: str) -> bool:
    return (
        len(text) >= 2
        and _is_ascii_alpha(text[0])
        and text[1] in ":|"
        and (len(text) == 2 or text[2] in "/\\?#")
    )


def _is_windows_drive_letter(segment: str) -> bool:
    return len(segment) == 2 and _starts_with_windows_drive_letter(segment)


def _is_normalized_windows_drive_letter(segment: str) -> bool:
    return _is_windows_drive_letter(segment) and segment[1] == ":"


class _Parser:
    """The crate's parser for an absolute URL; `self.url` is the serialisation being built.

    Positions index `self.text`; reading skips ASCII tab and newline, as the crate does.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.url = ""

    def next(self, at: int) -> tuple[str | None, int]:
        """The character at `at` (tabs and newlines skipped) and the position after it."""
        while at < len(self.text):
            char = self.text[at]
            at += 1
            if char not in _TAB_OR_NEWLINE:
                return char, at
        return None, at

    def parse(self) -> str:
        scheme, at = self.scheme()
        self.url = scheme + ":"
        if scheme == _FILE:
            self.url = ""
            self.file(at)
        elif scheme in _DEFAULT_PORTS:
            char, after = self.next(at)
            while char is not None and char in "/\\":
                at = after
                char, after = self.next(at)
            self.after_double_slash(at, _SPECIAL, len(scheme))
        else:
            self.non_special(at, len(scheme))
        return self.url

    def scheme(self) -> tuple[str, int]:
        char, at = self.next(0)
        if char is None or not _is_ascii_alpha(char):
            raise _invalid("relative URL without a base")
        scheme = []
        while char is not None:
            if "a" <= char <= "z" or char in _DIGITS or char in "+-.":
                scheme.append(char)
            elif "A" <= char <= "Z":
                scheme.append(char.lower())
            elif char == ":":
                return "".join(scheme), at
            else:
                break
            char, at = self.next(at)
        raise _invalid("relative URL without a base")

    def non_special(self, at: int, scheme_end: int) -> None:
        first, after_first = self.next(at)
        second, after_second = self.next(after_first)
        if first == "/" and second == "/":
            self.after_double_slash(after_second, _OTHER, scheme_end)
            return
        path_start = len(self.url)
        if first == "/":
            self.url += "/"
            at = self.path(_OTHER, [False], path_start, after_first)
        else:
            at = self.opaque_path(at)
        self.query_and_fragment_after_path(_OTHER, scheme_end, path_start, at)

    def file(self, at: int) -> None:
        first, after_first = self.next(at)
        if first is not None and first in "/\\":
            second, after_second = self.next(after_first)
            self.url = "file://"
            if second is not None and second in "/\\":
                host_start = len(self.url)
                has_host, rest = self.file_host(after_second)
                host_end = len(self.url)
                keeps_host = [has_host]
                if has_host:
                    rest = self.path_start(_FILE, keeps_host, rest)
                else:
                    path_start = len(self.url)
                    self.url += "/"
                    rest = self.path(_FILE, keeps_host, path_start, rest)
                if not keeps_host[0]:
                    self.url = self.url[:host_start] + self.url[host_end:]
                self.query_and_fragment(_FILE, rest)
                return
            self.query_and_fragment(_FILE, self.path(_FILE, [False], len(self.url), at))
            return
        self.url = "file:///"
        self.query_and_fragment(_FILE, self.path(_FILE, [False], len("file://"), at))

    def file_host(self, at: int) -> tuple[bool, int]:
        """Write the host of a file URL if it has one; its presence and where the path starts."""
        host, rest = self.scan_host(at, "/\\?#", brackets=False)
        if _is_windows_drive_letter(host) or host == "":
            return False, at if host else rest
        kind, serialized = _special_host(host)
        if kind == "domain" and serialized == "localhost":
            return False, rest
        self.url += serialized
        return True, rest

    def scan_host(self, at: int, stops: str, *, brackets: bool) -> tuple[str, int]:
        """The host text from `at` (tabs and newlines dropped) and where it ends."""
        chars: list[str] = []
        inside_brackets = False
        while at < len(self.text):
            char = self.text[at]
            if char in stops or (char == ":" and brackets and not inside_brackets):
                break
            at += 1
            if char in _TAB_OR_NEWLINE:
                continue
            if char == "[":
                inside_brackets = True
            elif char == "]":
                inside_brackets = False
            chars.append(char)
        return "".join(chars), at

    def after_double_slash(self, at: int, kind: str, scheme_end: int) -> None:
        self.url += "//"
        before_authority = len(self.url)
        at = self.userinfo(at, kind)
        has_authority = len(self.url) != before_authority
        has_host, at = self.host_and_port(at, kind, scheme_end)
        if not has_host and has_authority:
            raise _invalid("empty host")
        path_start = len(self.url)
        at = self.path_start(kind, [True], at)
        self.query_and_fragment_after_path(kind, scheme_end, path_start, at)

    def userinfo(self, at: int, kind: str) -> int:
        """Write the userinfo (and `@`) if there is one; where the host starts."""
        last_at: tuple[int, int] | None = None
        count = 0
        position = at
        while True:
            char, after = self.next(position)
            if char is None or char in "/?#" or (char == "\\" and kind != _OTHER):
                break
            if char == "@":
                last_at = (count, after)
            count += 1
            position = after
        if last_at is None:
            return at
        length, host_at = last_at
        if length == 0:
            char, _ = self.next(host_at)
            if char is not None and (char in "/?#" or (kind != _OTHER and char == "\\")):
                raise _invalid("empty host")
            return host_at
        username_done = has_password = has_username = False
        position = at
        while length > 0:
            char, position = self.next(position)
            if char is None:  # cannot happen: the characters were counted above
                break
            length -= 1
            if char == ":" and not username_done:
                username_done = True
                if length > 0:
                    self.url += ":"
                    has_password = True
            else:
                has_username = has_username or not has_password
                self.url += _encode(char, _USERINFO)
        if has_username or has_password:
            self.url += "@"
        return host_at

    def host_and_port(self, at: int, kind: str, scheme_end: int) -> tuple[bool, int]:
        """Write host and port; whether there is a (non-empty) host, and where the path starts."""
        host, at = self.scan_host(at, "/?#\\" if kind != _OTHER else "/?#", brackets=True)
        if kind == _SPECIAL and host == "":
            raise _invalid("empty host")
        host_kind, serialized = _special_host(host) if kind != _OTHER else _opaque_host(host)
        self.url += serialized
        empty = host_kind == "domain" and serialized == ""
        char, after = self.next(at)
        if empty and (char == ":" or kind != _OTHER):
            raise _invalid("empty host")
        if char == ":":
            port, at = self.port(after, _DEFAULT_PORTS.get(self.url[:scheme_end]))
            if port is not None:
                self.url += f":{port}"
        return not empty, at

    def port(self, at: int, default: int | None) -> tuple[int | None, int]:
        port = 0
        has_digit = False
        while True:
            char, after = self.next(at)
            if char is None:
                break
            if char in _DIGITS:
                port = port * 10 + int(char)
                if port > 0xFFFF:
                    raise _invalid("invalid port number")
                has_digit = True
            elif char not in "/\\?#":
                raise _invalid("invalid port number")
            else:
                break
            at = after
        return (port if has_digit and port != default else None), at

    def path_start(self, kind: str, has_host: list[bool], at: int) -> int:
        path_start = len(self.url)
        char, after = self.next(at)
        if kind != _OTHER:
            if not self.url.endswith("/"):
                self.url += "/"
                if char is not None and char in "/\\":
                    return self.path(kind, has_host, path_start, after)
            return self.path(kind, has_host, path_start, at)
        if char is not None and char in "?#":
            return at
        if char is not None and char != "/":
            self.url += "/"
        return self.path(kind, has_host, path_start, at)

    def path(self, kind: str, has_host: list[bool], path_start: int, at: int) -> int:
        """Write path segments from `at` (resolving dot segments); where the path ends."""
        special = kind != _OTHER
        while True:
            segment_start = len(self.url)
            ends_with_slash = False
            pending: list[str] = []
            while True:
                if at >= len(self.text):
                    self.url += _encode("".join(pending), _PATH)
                    break
                char = self.text[at]
                at += 1
                if char in _TAB_OR_NEWLINE:
                    self.url += _encode("".join(pending), _PATH)
                    pending = []
                    continue
                if char == "/" or (char == "\\" and special):
                    self.url += _encode("".join(pending), _PATH) + "/"
                    ends_with_slash = True
                    break
                if char in "?#":
                    self.url += _encode("".join(pending), _PATH)
                    at -= 1
                    break
                if (
                    kind == _FILE
                    and len(self.url) > path_start
                    and _is_normalized_windows_drive_letter(self.url[path_start + 1 :])
                ):
                    self.url += _encode("".join(pending), _PATH) + "/"
                    pending = []
                    segment_start += 1
                pending.append(char)
            self.segment_done(kind, has_host, path_start, segment_start, ends_with_slash)
            if not ends_with_slash:
                break
        if kind == _FILE:
            self.url = self.url[:path_start] + "/" + self.url[path_start:].lstrip("/")
        return at

    def segment_done(
        self, kind: str, has_host: list[bool], path_start: int, start: int, ends_with_slash: bool
    ) -> None:
        """Resolve the segment just written: `..`, `.`, or a Windows drive letter."""
        segment = self.url[start : len(self.url) - 1 if ends_with_slash else len(self.url)]
        if segment in _DOUBLE_DOT:
            self.url = self.url[:start]
            if self.url.endswith("/") and self.last_slash_can_be_removed(path_start):
                self.url = self.url[:-1]
            self.shorten_path(kind, path_start)
            if ends_with_slash and not self.url.endswith("/"):
                self.url += "/"
        elif segment in _SINGLE_DOT:
            self.url = self.url[:start]
            if not self.url.endswith("/"):
                self.url += "/"
        elif kind == _FILE and start == path_start + 1 and _is_windows_drive_letter(segment):
            self.url = self.url[:start] + segment[0] + ":" + ("/" if ends_with_slash else "")
            has_host[0] = False

    def last_slash_can_be_removed(self, path_start: int) -> bool:
        before = self.url[:-1].rfind("/")
        if before < 0:
            return False
        rest = self.url[before:]
        drive = rest[0] in "/\\?#" and _starts_with_windows_drive_letter(rest[1:])
        return before >= path_start and not drive

    def shorten_path(self, kind: str, path_start: int) -> None:
        if len(self.url) == path_start:
            return
        if kind == _FILE and _is_normalized_windows_drive_letter(self.url[path_start:]):
            return
        self.pop_path(kind, path_start)

    def pop_path(self, kind: str, path_start: int) -> None:
        if len(self.url) > path_start:
            segment_start = path_start + self.url[path_start:].rfind("/") + 1
            last = self.url[segment_start:]
            if not (kind == _FILE and _is_normalized_windows_drive_letter(last)):
                self.url = self.url[:segment_start]

    def opaque_path(self, at: int) -> int:
        while True:
            char, after = self.next(at)
            if char is None:
                return after
            if char in "?#":
                return at
            self.url += _encode(char, _CONTROLS)
            at = after

    def query_and_fragment_after_path(
        self, kind: str, scheme_end: int, path_start: int, at: int
    ) -> None:
        # A path starting with an empty segment and no host would read back as a host.
        if path_start == scheme_end + 1 and self.url[path_start:].startswith("//"):
            self.url = self.url[:path_start] + "/." + self.url[path_start:]
        self.query_and_fragment(kind, at)

    def query_and_fragment(self, kind: str, at: int) -> None:
        char, at = self.next(at)
        if char is None:
            return
        if char == "?":
            query, found_fragment, at = self.until_fragment(at)
            self.url += "?" + _encode(query, _SPECIAL_QUERY if kind != _OTHER else _QUERY)
            if not found_fragment:
                return
        fragment = "".join(c for c in self.text[at:] if c not in _TAB_OR_NEWLINE)
        self.url += "#" + _encode(fragment, _FRAGMENT)

    def until_fragment(self, at: int) -> tuple[str, bool, int]:
        chars: list[str] = []
        while at < len(self.text):
            char = self.text[at]
            at += 1
            if char == "#":
                return "".join(chars), True, at
            if char not in _TAB_OR_NEWLINE:
                chars.append(char)
        return "".join(chars), False, at


# --------------------------------------------------------------------------
# Hosts
# --------------------------------------------------------------------------


def _special_host(host: str) -> tuple[str, str]:
    """("domain" | "ipv4" | "ipv6", serialisation) of the host of a special scheme."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise _invalid("invalid IPv6 address")
        return "ipv6", f"[{_ipv6_text(_parse_ipv6(host[1:-1]))}]"
    domain = _domain_to_ascii(_percent_decode(host.encode("utf-8")))
    if domain == "":
        raise _invalid("empty host")
    if _ends_in_a_number(domain):
        return "ipv4", _parse_ipv4(domain)
    return "domain", domain


def _opaque_host(host: str) -> tuple[str, str]:
    """The host of a non-special scheme: kept as written, percent-encoded."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise _invalid("invalid IPv6 address")
        return "ipv6", f"[{_ipv6_text(_parse_ipv6(host[1:-1]))}]"
    if any(char in _FORBIDDEN_OPAQUE for char in host):
        raise _invalid("invalid domain character")
    return "domain", _encode(host, _CONTROLS)


def _percent_decode(data: bytes) -> bytes:
    out = bytearray()
    index = 0
    while index < len(data):
        byte = data[index]
        pair = data[index + 1 : index + 3]
        if byte == 0x25 and len(pair) == 2 and all(chr(b) in _HEX for b in pair):
            out.append(int(pair, 16))
            index += 3
        else:
            out.append(byte)
            index += 1
    return bytes(out)


def _domain_to_ascii(data: bytes) -> str:
    """UTS #46 ToASCII as the URL Standard runs it, for ASCII input only."""
    if any(byte >= 0x80 for byte in data):
        raise UnsupportedURLError(
            "invalid URL: a non-ASCII host needs UTS #46 processing, which is not implemented"
        )
    labels = data.decode("ascii").split(".")
    for label in labels:
        if label[:4].lower() == "xn--" and not _valid_punycode(_ascii_lower(label[4:])):
            raise _invalid("invalid international domain name")
        if any(char in _FORBIDDEN_DOMAIN for char in label):
            raise _invalid("invalid international domain name")
    return ".".join(_ascii_lower(label) for label in labels)


def _valid_punycode(payload: str) -> bool:
    """Whether an ASCII `xn--` label's payload is one UTS #46 would keep: it
    decodes to a non-ASCII label of letters, marks, digits and hyphens in
    normal form that encodes back to it. (The exact check needs the UTS #46
    tables: a label with symbols, an emoji say, is refused here though
    pydantic may take it; the labels pydantic writes for a host in a script's
    letters read back unchanged.)"""
    try:
        decoded = payload.encode("ascii").decode("punycode")
    except UnicodeError:
        return False
    return (
        bool(decoded)
        and not decoded.isascii()
        and decoded == unicodedata.normalize("NFC", decoded)
        and decoded == decoded.lower()
        and all(c == "-" or unicodedata.category(c)[0] in "LMN" for c in decoded)
        and decoded.encode("punycode").decode("ascii") == payload
    )


def _ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _ends_in_a_number(domain: str) -> bool:
    parts = domain.split(".")
    last = parts[-1]
    if last == "":
        if len(parts) == 1:
            return False
        last = parts[-2]
    if last != "" and all(char in _DIGITS for char in last):
        return True
    try:
        _ipv4_number(last)
    except ValueError:
        return False
    return True


def _ipv4_number(text: str) -> int | None:
    """The number of one IPv4 part (None: it overflows 32 bits); ValueError if not a number."""
    if text == "":
        raise ValueError("empty")
    radix, digits = 10, _DIGITS
    if text[:2] in ("0x", "0X"):
        text, radix, digits = text[2:], 16, _HEX
    elif len(text) >= 2 and text[0] == "0":
        text, radix, digits = text[1:], 8, "01234567"
    if text == "":
        return 0
    if not all(char in digits for char in text):
        raise ValueError("not a number")
    number = int(text, radix)
    return number if number <= 0xFFFFFFFF else None


def _parse_ipv4(domain: str) -> str:
    parts = domain.split(".")
    if parts[-1] == "":
        parts.pop()
    if len(parts) > 4:
        raise _invalid("invalid IPv4 address")
    numbers: list[int] = []
    for part in parts:
        try:
            number = _ipv4_number(part)
        except ValueError:
            raise _invalid("invalid IPv4 address") from None
        if number is None:
            raise _invalid("invalid IPv4 address")
        numbers.append(number)
    address = numbers.pop()
    if address > 0xFFFFFFFF >> (8 * len(numbers)) or any(n > 255 for n in numbers):
        raise _invalid("invalid IPv4 address")
    for counter, number in enumerate(numbers):
        address += number << (8 * (3 - counter))
    return ".".join(str(address >> shift & 0xFF) for shift in (24, 16, 8, 0))


def _parse_ipv6(text: str) -> list[int]:
    """The eight pieces of an IPv6 address (the URL Standard's parser)."""
    data = text.encode("utf-8")
    size = len(data)
    pieces = [0] * 8
    piece = 0
    compress: int | None = None
    index = 0
    invalid = _invalid("invalid IPv6 address")
    if size < 2:
        raise invalid
    if data[0] == ord(":"):
        if data[1] != ord(":"):
            raise invalid
        index, piece, compress = 2, 1, 1
    ipv4_at: int | None = None
    while index < size:
        if piece == 8:
            raise invalid
        if data[index] == ord(":"):
            if compress is not None:
                raise invalid
            index += 1
            piece += 1
            compress = piece
            continue
        start = index
        value = 0
        while index < min(size, start + 4) and chr(data[index]) in _HEX:
            value = value * 16 + int(chr(data[index]), 16)
            index += 1
        if index < size:
            if data[index] == ord("."):
                if index == start or piece > 6:
                    raise invalid
                ipv4_at = start
                break
            if data[index] != ord(":"):
                raise invalid
            index += 1
            if index == size:
                raise invalid
        pieces[piece] = value
        piece += 1
    if ipv4_at is not None:
        index, piece = _ipv6_ipv4_tail(data, ipv4_at, pieces, piece)
    if index < size:
        raise invalid
    if compress is not None:
        swaps = piece - compress
        piece = 7
        while swaps > 0:
            other = compress + swaps - 1
            pieces[piece], pieces[other] = pieces[other], pieces[piece]
            swaps -= 1
            piece -= 1
    elif piece != 8:
        raise invalid
    return pieces


def _ipv6_ipv4_tail(data: bytes, index: int, pieces: list[int], piece: int) -> tuple[int, int]:
    """Read the dotted IPv4 ending an IPv6 address into the last two pieces."""
    invalid = _invalid("invalid IPv6 address")
    numbers_seen = 0
    while index < len(data):
        if numbers_seen > 0:
            if numbers_seen < 4 and data[index] == ord("."):
                index += 1
            else:
                raise invalid
        number: int | None = None
        while index < len(data) and chr(data[index]) in _DIGITS:
            digit = data[index] - ord("0")
            if number is None:
                number = digit
            elif number == 0:
                raise invalid  # no leading zero
            else:
                number = number * 10 + digit
                if number > 255:
                    raise invalid
            index += 1
        if number is None:
            raise invalid
        pieces[piece] = pieces[piece] * 0x100 + number
        numbers_seen += 1
        if numbers_seen in (2, 4):
            piece += 1
    if numbers_seen != 4:
        raise invalid
    return index, piece


def _ipv6_text(pieces: list[int]) -> str:
    """Lower-case hex, the first longest run of two or more zero pieces compressed."""
    best_start, best_length, start = -1, 1, -1
    for index, value in enumerate([*pieces, 1]):
        if value == 0 and index < 8:
            start = index if start < 0 else start
            continue
        if start >= 0 and index - start > best_length:
            best_start, best_length = start, index - start
        start = -1
    if best_start < 0:
        return ":".join(f"{value:x}" for value in pieces)
    head = ":".join(f"{value:x}" for value in pieces[:best_start])
    tail = ":".join(f"{value:x}" for value in pieces[best_start + best_length :])
    return f"{head}::{tail}"
