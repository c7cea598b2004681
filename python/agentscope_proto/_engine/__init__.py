"""The format engine: what `format()`, `Conversation` and the server share
around the providers' formatters.

- `views`: each input message as the formatters see it (`MsgView`), built
  fresh, from a `FormatCache`, or found by the bytes it arrived as;
- `entries`: what the engine keeps in a `FormatCache`: the keys, a view
  (`ViewRecord`), a chat turn (`TurnRecord`), where a walk ended
  (`WalkState`, `Prefix`);
- `walk`: the cache as one chat walk sees it (`TurnCache`), the one object
  the turn skeleton (`providers/_turns.py`) is handed;
- `body`: a formatted body as JSON, written from the cached turns' JSON
  where it can (`EncodedMessage`, `JsonRun`, `body_to_json`);
- `wire`: a request's messages read from its bytes (the server's).

It sits below the providers (they import views and entries from it) and
above the message codec; `formatting.py` and `conversation.py` drive it.
"""
