/* DashScope's MultiModalConversation messages in AgentScope 1.0.21's fidelity
 * (the Python reference: providers/dashscope.py, `DashScopeParity`, its
 * `_CHAT` and `_format_history`): bare-key content items (`{"text": ...}`,
 * `{"image"|"audio"|"video": data URI}`), an all-text content list made one
 * string (`_collapse_text`), thinking dropped with AgentScope's warning. Tool
 * calls and tool messages are OpenAI's dicts (providers/_tools.py writes both):
 * openai.h's. Names are `ds_`-prefixed (one compilation unit with every
 * provider's file). Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_DASHSCOPE_H
#define AGENTSCOPE_CCORE_DASHSCOPE_H

#include "openai.h"

#define DASHSCOPE_NAMES(NAME)                                                              \
    NAME(ds_history_end, "</history>")                                                     \
    NAME(ds_newline, "\n")

DASHSCOPE_NAMES(DECLARE_NAME)

/* `{"text": text}` (a new reference; NULL with an exception). */
static PyObject *dashscope_text_item(PyObject *text) {
    PyObject *keys[] = {k_text};
    PyObject *values[] = {text};
    return dict_of(1, keys, values);
}

static int init_dashscope_names(void) {
    DASHSCOPE_NAMES(INTERN_NAME)
    return 0;
}

/* `{kind: data URI}` (`_media_item` of inline media; a URL is Python's: it
 * may name a local file). */
static int dashscope_media(PyObject *kind, Span block, PyObject *items) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    PyObject *uri = data_url(&media);
    if (uri == NULL) return WALK_ERROR;
    if (uri == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {kind};
    PyObject *values[] = {uri};
    return append_new(items, dict_of(1, keys, values));
}

static PyObject *dashscope_media_kind(uint32_t kind) {
    return kind == BLOCK_IMAGE ? s_image : kind == BLOCK_AUDIO ? s_audio : s_video;
}

/* A chat turn's parts: media items as they go out, texts as str until the
 * turn knows whether they are its content's one string (`_collapse_text`). */
typedef struct {
    PyObject *parts;
    Py_ssize_t nonempty; /* texts that are not empty */
    Py_ssize_t media;    /* parts that are not text */
} Parts;

static int dashscope_text_part(Parts *turn, Span text) {
    if (text.n > 0) turn->nonempty++;
    return append_new(turn->parts, text_of(text));
}

static int dashscope_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind,
                           Span body, Parts *turn, PyObject *calls) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK ? dashscope_text_part(turn, text)
                                                 : WALK_UNDECIDED;
    case BLOCK_TOOL_USE: return openai_tool_call(body, calls);
    case BLOCK_TOOL_RESULT: return openai_tool_message(body, walk->out);
    case BLOCK_IMAGE:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO:
        turn->media++;
        return dashscope_media(dashscope_media_kind(kind), body, turn->parts);
    case BLOCK_THINKING: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* The turn's content (a new reference): its non-empty texts joined when
 * every part is text and some are not empty, else the parts, each text
 * made `{"text": ...}` in place. */
static PyObject *dashscope_content(Parts *turn) {
    PyObject *parts = turn->parts;
    Py_ssize_t n = PyList_GET_SIZE(parts);
    if (turn->media == 0 && turn->nonempty > 0) {
        if (n == 1) return Py_NewRef(PyList_GET_ITEM(parts, 0));
        PyObject *texts = turn->nonempty == n ? Py_NewRef(parts) : PyList_New(0);
        for (Py_ssize_t i = 0; texts != parts && texts != NULL && i < n; i++) {
            PyObject *text = PyList_GET_ITEM(parts, i);
            if (PyUnicode_GET_LENGTH(text) > 0 && PyList_Append(texts, text) < 0)
                Py_CLEAR(texts);
        }
        if (texts == NULL) return NULL;
        PyObject *joined = PyUnicode_Join(ds_newline, texts);
        Py_DECREF(texts);
        return joined;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyUnicode_CheckExact(part)) continue; /* a media item */
        PyObject *item = dashscope_text_item(Py_NewRef(part));
        if (item == NULL) return NULL;
        PyList_SET_ITEM(parts, i, item); /* the item holds the text now */
        Py_DECREF(part);
    }
    return Py_NewRef(parts);
}

/* One message (`_finish_chat`): its tool results go out as they come, then
 * `{"role", "content"[, "tool_calls"]}` when it has parts or tool calls. */
static int dashscope_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    Parts turn = {PyList_New(0), 0, 0};
    PyObject *calls = PyList_New(0);
    int status = WALK_ERROR;
    if (turn.parts == NULL || calls == NULL) goto done;
    if (head->text.p != NULL) {
        if ((status = dashscope_text_part(&turn, head->text)) != WALK_OK) goto done;
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while ((rc = next_block(&items, &kind, &body)) == 1) {
            status = dashscope_block(walk, index, at++, kind, body, &turn, calls);
            if (status != WALK_OK) goto done;
        }
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = WALK_OK;
    Py_ssize_t nparts = PyList_GET_SIZE(turn.parts), ncalls = PyList_GET_SIZE(calls);
    if (nparts || ncalls) {
        PyObject *keys[] = {k_role, k_content, k_tool_calls};
        PyObject *values[] = {Py_NewRef(role_name(head->role)), dashscope_content(&turn), NULL};
        if (ncalls) values[2] = Py_NewRef(calls);
        status = append_new(walk->out, dict_of(ncalls ? 3 : 2, keys, values));
    }
done:
    Py_XDECREF(turn.parts);
    Py_XDECREF(calls);
    return status;
}

static PyObject *dashscope_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("dashscope_chat", dashscope_turn, args, nargs);
}

/* -- DashScopeMultiAgentFormatter ---------------------------------------------- */

/* The leading system message, its text as one string (`system_text`: the
 * text blocks joined, None without any). */
static int dashscope_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *content = text_content(head, 0);
    if (content == NULL) return WALK_ERROR;
    if (content == Py_NotImplemented) return WALK_UNDECIDED;
    PyObject *keys[] = {k_role, k_content};
    PyObject *values[] = {Py_NewRef(s_system), content};
    return append_new(walk->out, dict_of(2, keys, values));
}

/* A history message being made (`_History`): its items so far, the lines
 * not yet made an item, and the history tags' prompt. */
typedef struct {
    PyObject *items;
    Buffer lines;
    Span prompt;
    Py_ssize_t media;
} Agents;

/* The lines so far as one text, opening the history behind the prompt when
 * it is the first item, and closing it when it is the `last` (`wrap_history`);
 * the lines are taken. A new reference, NULL with an exception. */
static PyObject *agents_text(Agents *run, int last) {
    Buffer whole;
    buffer_init(&whole);
    PyObject *text = NULL;
    int first = PyList_GET_SIZE(run->items) == 0;
    if ((!first || (buffer_put(&whole, run->prompt.p, run->prompt.n) == 0 &&
                    buffer_put(&whole, "<history>\n", 10) == 0)) &&
        buffer_put(&whole, run->lines.data, run->lines.len) == 0 &&
        (!last || buffer_put(&whole, "\n</history>", 11) == 0))
        text = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
    else
        PyErr_NoMemory();
    buffer_free(&whole);
    run->lines.len = 0;
    return text;
}

/* A media item of the history (`_history_media`): the lines before it made
 * an item first, or the opening tags one when nothing comes before it. */
static int agents_media(Agents *run, uint32_t kind, Span body) {
    /* A line is never empty (`name: `): lines mean text to flush. */
    if ((run->lines.len > 0 || PyList_GET_SIZE(run->items) == 0) &&
        append_new(run->items, dashscope_text_item(agents_text(run, 0))) != WALK_OK)
        return WALK_ERROR;
    run->media++;
    return dashscope_media(dashscope_media_kind(kind), body, run->items);
}

static int agents_line(Agents *run, const Head *head, Span text) {
    if (history_line(&run->lines, head, text) < 0) {
        PyErr_NoMemory();
        return WALK_ERROR;
    }
    return WALK_OK;
}

static int agents_message(Agents *run, const Head *head) {
    if (head->text.p != NULL) return agents_line(run, head, head->text);
    if (head->blocks.p == NULL) return WALK_OK;
    Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
    Span body, text = {NULL, 0};
    uint32_t kind;
    int rc, status = WALK_OK;
    while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
        switch (kind) {
        case BLOCK_TEXT:
            status = read_text(body, &text) == WALK_OK ? agents_line(run, head, text)
                                                       : WALK_UNDECIDED;
            break;
        case BLOCK_IMAGE:
        case BLOCK_AUDIO:
        case BLOCK_VIDEO: status = agents_media(run, kind, body); break;
        case BLOCK_THINKING: /* skipped silently, as AgentScope does */
            status = read_thinking(body, &text) == WALK_OK ? WALK_OK : WALK_UNDECIDED;
            break;
        default: status = WALK_UNDECIDED; break;
        }
    }
    return status == WALK_OK && rc < 0 ? WALK_UNDECIDED : status;
}

/* A run of agent messages as one user message (`_format_history`): `name:
 * text` lines in `<history>` tags behind the prompt, media items where they
 * stand among them; one string when there is no media. */
static int dashscope_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes,
                            Py_ssize_t n, PyObject *prompt) {
    Agents run = {PyList_New(0), {0}, {NULL, 0}, 0};
    buffer_init(&run.lines);
    int status = WALK_ERROR;
    if (run.items == NULL) goto done;
    const char *text = PyUnicode_AsUTF8AndSize(prompt, &run.prompt.n);
    if (text == NULL) { /* not UTF-8 (a lone surrogate): Python's to judge */
        PyErr_Clear();
        status = WALK_UNDECIDED;
        goto done;
    }
    run.prompt.p = (const uint8_t *)text;
    for (Py_ssize_t m = 0; m < n; m++) {
        if ((status = agents_message(&run, &heads[m])) != WALK_OK) goto done;
    }
    status = WALK_OK;
    PyObject *content;
    if (run.media == 0) {
        if (run.lines.len == 0) goto done; /* nothing to say: no message */
        content = agents_text(&run, 1);  /* `_collapse_text`: one string */
    } else {
        PyObject *closing = run.lines.len > 0 ? agents_text(&run, 1) : Py_NewRef(ds_history_end);
        if ((status = append_new(run.items, dashscope_text_item(closing))) != WALK_OK) goto done;
        content = Py_NewRef(run.items);
    }
    PyObject *keys[] = {k_role, k_content};
    PyObject *values[] = {Py_NewRef(s_user), content};
    status = append_new(walk->out, dict_of(2, keys, values));
done:
    buffer_free(&run.lines);
    Py_XDECREF(run.items);
    return status;
}

static const History DASHSCOPE_HISTORY = {dashscope_turn, dashscope_system, dashscope_agents};

static PyObject *dashscope_multi_agent(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs) {
    return run_history("dashscope_multi_agent", &DASHSCOPE_HISTORY, args, nargs);
}

#endif
