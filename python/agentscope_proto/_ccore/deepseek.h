/* DeepSeek in AgentScope 1.0.21's fidelity (the Python reference:
 * providers/deepseek.py, `_CHAT_BLOCKS`, `_finish_chat` and
 * `_format_agent_message`): one string of content per message (its texts
 * joined by newlines), thinking as `reasoning_content`, tool calls and tool
 * messages as OpenAI writes them (openai.h's), media dropped with AgentScope's
 * warning. Part of _ccore.c, included after openai.h. */
#ifndef AGENTSCOPE_CCORE_DEEPSEEK_H
#define AGENTSCOPE_CCORE_DEEPSEEK_H

#include "openai.h"

#define DEEPSEEK_NAMES(NAME)                                                               \
    NAME(ds_reasoning_content, "reasoning_content")

DEEPSEEK_NAMES(DECLARE_NAME)

static int init_deepseek_names(void) {
    DEEPSEEK_NAMES(INTERN_NAME)
    return 0;
}

/* Strings joined by "\n" as they come: the first kept as a span (most
 * messages have one), the rest copied behind it. */
typedef struct {
    Span first;
    Py_ssize_t count;
    Buffer rest;
} Joined;

static int joined_add(Joined *joined, Span text) {
    if (joined->count++ == 0) {
        joined->first = text;
        return 0;
    }
    if (joined->count == 2 &&
        buffer_put(&joined->rest, (const char *)joined->first.p, joined->first.n) < 0)
        return -1;
    return buffer_put(&joined->rest, "\n", 1) < 0 ||
                   buffer_put(&joined->rest, (const char *)text.p, text.n) < 0
               ? -1
               : 0;
}

/* The joined text's length in bytes (0: the empty string, falsy in Python). */
static Py_ssize_t joined_size(const Joined *joined) {
    return joined->count == 0 ? 0 : joined->count == 1 ? joined->first.n : joined->rest.len;
}

static PyObject *joined_text(const Joined *joined) {
    if (joined->count == 0) return Py_NewRef(s_empty);
    if (joined->count == 1) return text_of(joined->first);
    return PyUnicode_DecodeUTF8(joined->rest.data, joined->rest.len, NULL);
}

static int deepseek_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind, Span body,
                          Joined *texts, Joined *reasoning, PyObject *calls) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        if (read_text(body, &text) != WALK_OK) return WALK_UNDECIDED;
        return joined_add(texts, text) < 0 ? (PyErr_NoMemory(), WALK_ERROR) : WALK_OK;
    case BLOCK_THINKING:
        if (read_thinking(body, &text) != WALK_OK) return WALK_UNDECIDED;
        return joined_add(reasoning, text) < 0 ? (PyErr_NoMemory(), WALK_ERROR) : WALK_OK;
    case BLOCK_TOOL_USE: return openai_tool_call(body, calls);
    /* Media in a result would leave their saved path in the text: Python's
     * (`result_text` answers None for them). */
    case BLOCK_TOOL_RESULT: return openai_tool_message(body, walk->out);
    case BLOCK_IMAGE:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* The message itself (`_finish_chat`): its text, or null when it calls tools
 * ("" otherwise, and then it is dropped, reasoning or not); its reasoning when
 * there is any; its calls. */
static int deepseek_message(Walk *walk, const Head *head, const Joined *texts,
                            const Joined *reasoning, PyObject *calls) {
    Py_ssize_t ncalls = PyList_GET_SIZE(calls);
    int has_text = joined_size(texts) > 0;
    if (!has_text && !ncalls) return WALK_OK;
    PyObject *keys[4] = {k_role, k_content, NULL, NULL};
    PyObject *values[4] = {Py_NewRef(role_name(head->role)),
                           has_text ? joined_text(texts) : Py_NewRef(Py_None), NULL, NULL};
    int n = 2;
    if (joined_size(reasoning) > 0) {
        keys[n] = ds_reasoning_content;
        values[n++] = joined_text(reasoning);
    }
    if (ncalls) {
        keys[n] = k_tool_calls;
        values[n++] = Py_NewRef(calls);
    }
    return append_new(walk->out, dict_of(n, keys, values));
}

/* One message: its tool results go out as they come, then the message. */
static int deepseek_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    Joined texts = {{NULL, 0}, 0, {0}}, reasoning = {{NULL, 0}, 0, {0}};
    buffer_init(&texts.rest);
    buffer_init(&reasoning.rest);
    PyObject *calls = PyList_New(0);
    int status = WALK_ERROR;
    if (calls == NULL) goto done;
    if (head->text.p != NULL) {
        if (joined_add(&texts, head->text) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while ((rc = next_block(&items, &kind, &body)) == 1) {
            status = deepseek_block(walk, index, at++, kind, body, &texts, &reasoning, calls);
            if (status != WALK_OK) goto done;
        }
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = deepseek_message(walk, head, &texts, &reasoning, calls);
done:
    buffer_free(&texts.rest);
    buffer_free(&reasoning.rest);
    Py_XDECREF(calls);
    return status;
}

static PyObject *deepseek_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("deepseek_chat", deepseek_turn, args, nargs);
}

/* -- DeepSeekMultiAgentFormatter ----------------------------------------------- */

/* A history message's block: a text's line; thinking and media (known to be
 * what the view reads) are left out silently. */
static int deepseek_history_block(Buffer *lines, const Head *head, uint32_t kind, Span body,
                                  int *any) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        if (read_text(body, &text) != WALK_OK) return WALK_UNDECIDED;
        if (history_line(lines, head, text) < 0) return PyErr_NoMemory(), WALK_ERROR;
        *any = 1;
        return WALK_OK;
    case BLOCK_THINKING: return read_thinking(body, &text) == WALK_OK ? WALK_OK : WALK_UNDECIDED;
    case BLOCK_IMAGE:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return passed_by(kind, body, 1) ? WALK_OK : WALK_UNDECIDED;
    default: return WALK_UNDECIDED;
    }
}

/* A run of agent messages as one user message whose content is the string of
 * their `name: text` lines in `<history>` tags behind the prompt (none
 * without lines). */
static int deepseek_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes,
                           Py_ssize_t n, PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    int status = WALK_OK, any = 0;
    for (Py_ssize_t m = 0; m < n && status == WALK_OK; m++) {
        const Head *head = &heads[m];
        if (head->text.p != NULL) {
            if (history_line(&lines, head, head->text) < 0) {
                PyErr_NoMemory();
                status = WALK_ERROR;
            }
            any = 1;
            continue;
        }
        if (head->blocks.p == NULL) continue;
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1)
            status = deepseek_history_block(&lines, head, kind, body, &any);
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status == WALK_OK && any) {
        Py_ssize_t size;
        const char *start = PyUnicode_AsUTF8AndSize(prompt, &size);
        PyObject *text = NULL;
        Buffer whole;
        buffer_init(&whole);
        if (start != NULL && buffer_put(&whole, start, size) == 0 &&
            buffer_put(&whole, "<history>\n", 10) == 0 &&
            buffer_put(&whole, lines.data, lines.len) == 0 &&
            buffer_put(&whole, "\n</history>", 11) == 0)
            text = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
        else if (start != NULL)
            PyErr_NoMemory();
        buffer_free(&whole);
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(s_user), text};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    buffer_free(&lines);
    return status;
}

/* The leading system message is OpenAI's (`system_blocks`: its text blocks). */
static const History DEEPSEEK_HISTORY = {deepseek_turn, openai_system, deepseek_agents};

static PyObject *deepseek_multi_agent(PyObject *module, PyObject *const *args,
                                      Py_ssize_t nargs) {
    return run_history("deepseek_multi_agent", &DEEPSEEK_HISTORY, args, nargs);
}

#endif
