/* Gemini `generateContent` in AgentScope 1.0.21's fidelity (the Python
 * reference: providers/gemini.py, `GeminiParity` with `_CHAT` and
 * `_finish_chat`, `_system_turn`, `_history`): text parts, function calls
 * with their arguments as Python objects (`id` always None), each tool result
 * as a user turn of its own at once, inline media as `inline_data`, thinking
 * dropped with the provider's warning. A block carrying a thought signature
 * is Python's (the part takes it as bytes). Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_GEMINI_H
#define AGENTSCOPE_CCORE_GEMINI_H

#include "history.h"

/* ToolUseBlock.thought_signature: the one field of a call Gemini's walk reads
 * that `read_tool_use` passes by. */
enum { GEMINI_TOOL_USE_THOUGHT_SIGNATURE = 5 };

#define GEMINI_NAMES(NAME)                                                                 \
    NAME(k_parts, "parts")                                                                 \
    NAME(k_function_call, "function_call")                                                 \
    NAME(k_function_response, "function_response")                                         \
    NAME(k_args, "args")                                                                   \
    NAME(k_response, "response")                                                           \
    NAME(k_output, "output")                                                               \
    NAME(k_inline_data, "inline_data")                                                     \
    NAME(k_gemini_data, "data")                                                            \
    NAME(k_mime_type, "mime_type")                                                         \
    NAME(s_model, "model")                                                                 \
    NAME(s_gemini_skipped_thinking, "unsupported block type 'thinking'; skipped")          \
    NAME(s_history_close, "</history>")

GEMINI_NAMES(DECLARE_NAME)

static int init_gemini_names(void) {
    GEMINI_NAMES(INTERN_NAME)
    return 0;
}

/* `{"text": text}` (a new reference taken; NULL: an error already set). */
static int gemini_text_part(PyObject *text, PyObject *parts) {
    PyObject *keys[] = {k_text};
    PyObject *values[] = {text};
    return append_new(parts, dict_of(1, keys, values));
}

/* `{"function_call": {"id": None, "name": ..., "args": ...}}`. */
static int gemini_call_part(Span block, PyObject *parts) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number == GEMINI_TOOL_USE_THOUGHT_SIGNATURE) return WALK_UNDECIDED;
    }
    ToolUse use;
    if (rc < 0 || read_tool_use(block, &use) != WALK_OK) return WALK_UNDECIDED;
    PyObject *args = json_value_of(use.input);
    if (args == NULL) return WALK_ERROR;
    if (args == JSON_PYTHON_DECIDES) return WALK_UNDECIDED;
    PyObject *ckeys[] = {k_id, k_name, k_args};
    PyObject *cvalues[] = {Py_NewRef(Py_None), text_of(use.name), args};
    PyObject *keys[] = {k_function_call};
    PyObject *values[] = {dict_of(3, ckeys, cvalues)};
    return append_new(parts, dict_of(1, keys, values));
}

/* A tool result's user turn, `{"role": "user", "parts": [{"function_response":
 * {"id", "name", "response": {"output": text}}}]}`. */
static int gemini_response_turn(Span block, PyObject *out) {
    ToolResult result;
    if (read_tool_result(block, &result) != WALK_OK) return WALK_UNDECIDED;
    PyObject *text = result_text(&result);
    if (text == NULL) return WALK_ERROR;
    if (text == Py_None) return WALK_UNDECIDED;
    PyObject *okeys[] = {k_output};
    PyObject *ovalues[] = {text};
    PyObject *fkeys[] = {k_id, k_name, k_response};
    PyObject *fvalues[] = {text_of(result.id), text_of(result.name), dict_of(1, okeys, ovalues)};
    PyObject *pkeys[] = {k_function_response};
    PyObject *pvalues[] = {dict_of(3, fkeys, fvalues)};
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        Py_XDECREF(pvalues[0]);
        return WALK_ERROR;
    }
    if (append_new(parts, dict_of(1, pkeys, pvalues)) != WALK_OK) {
        Py_DECREF(parts);
        return WALK_ERROR;
    }
    PyObject *keys[] = {k_role, k_parts};
    PyObject *values[] = {Py_NewRef(s_user), parts};
    return append_new(out, dict_of(2, keys, values));
}

/* `{"inline_data": {"data": <base64>, "mime_type": <type>}}` of inline media
 * (`_media_part`); a URL is Python's (it reads or downloads). */
static int gemini_media_part(Span block, PyObject *parts) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    PyObject *data = base64_text((Span){NULL, 0}, &media, (Span){NULL, 0});
    if (data == NULL) return WALK_ERROR;
    if (data == Py_None) return WALK_UNDECIDED;
    PyObject *dkeys[] = {k_gemini_data, k_mime_type};
    PyObject *dvalues[] = {data, text_of(media.media_type)};
    PyObject *keys[] = {k_inline_data};
    PyObject *values[] = {dict_of(2, dkeys, dvalues)};
    return append_new(parts, dict_of(1, keys, values));
}

static int gemini_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind, Span body,
                        PyObject *parts) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK ? gemini_text_part(text_of(text), parts)
                                                 : WALK_UNDECIDED;
    case BLOCK_TOOL_USE: return gemini_call_part(body, parts);
    case BLOCK_TOOL_RESULT: return gemini_response_turn(body, walk->out);
    case BLOCK_IMAGE:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return gemini_media_part(body, parts);
    case BLOCK_THINKING:
        return read_thinking(body, &text) == WALK_OK
                   ? warn_at(walk, index, at, s_thinking, s_gemini_skipped_thinking)
                   : WALK_UNDECIDED;
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* One message: its tool results go out as they come, then the message as a
 * model (assistant) or user turn when it has parts (`_finish_chat`). */
static int gemini_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return WALK_ERROR;
    int status = WALK_OK;
    if (head->text.p != NULL) {
        status = gemini_text_part(text_of(head->text), parts);
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc = 0;
        Py_ssize_t at = 0;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1)
            status = gemini_block(walk, index, at++, kind, body, parts);
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status == WALK_OK && PyList_GET_SIZE(parts) > 0) {
        PyObject *keys[] = {k_role, k_parts};
        PyObject *values[] = {Py_NewRef(head->role == ROLE_ASSISTANT ? s_model : s_user),
                              Py_NewRef(parts)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    Py_DECREF(parts);
    return status;
}

static PyObject *gemini_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("gemini_chat", gemini_turn, args, nargs);
}

/* -- GeminiMultiAgentFormatter ---------------------------------------------------- */

/* The leading system message as a user turn of its text, its text blocks
 * joined by newlines, None without any (`_system_turn`). */
static int gemini_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *text = text_content(head, 1);
    if (text == NULL) return WALK_ERROR;
    if (text == Py_NotImplemented) return WALK_UNDECIDED;
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        Py_XDECREF(text);
        return WALK_ERROR;
    }
    if (gemini_text_part(text, parts) != WALK_OK) {
        Py_DECREF(parts);
        return WALK_ERROR;
    }
    PyObject *keys[] = {k_role, k_parts};
    PyObject *values[] = {Py_NewRef(s_user), parts};
    return append_new(walk->out, dict_of(2, keys, values));
}

/* The history lines so far as one text part (the first part of the turn
 * behind `prompt` and the opening tag; the last with the closing tag). */
static int gemini_lines_part(Buffer *lines, PyObject *prompt, int first, int last,
                             PyObject *parts) {
    Buffer whole;
    buffer_init(&whole);
    int ok = 1;
    if (first) {
        Py_ssize_t size;
        const char *head = PyUnicode_AsUTF8AndSize(prompt, &size);
        if (head == NULL) return WALK_ERROR;
        ok = buffer_put(&whole, head, size) == 0 && buffer_put(&whole, "<history>", 9) == 0;
    }
    ok = ok && buffer_put(&whole, lines->data, lines->len) == 0 &&
         (!last || buffer_put(&whole, "\n</history>", 11) == 0);
    PyObject *text = ok ? PyUnicode_DecodeUTF8(whole.data, whole.len, NULL) : PyErr_NoMemory();
    buffer_free(&whole);
    lines->len = 0;
    return gemini_text_part(text, parts);
}

/* A run of agent messages as one user turn (`_history`): the `name: text`
 * lines, media where it sat between them, in `<history>` tags (no newline
 * after the opening one) behind `prompt`; other blocks ignored. */
static int gemini_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes, Py_ssize_t n,
                         PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    PyObject *parts = PyList_New(0);
    int status = WALK_ERROR;
    if (parts == NULL) goto done;
    status = WALK_OK;
    for (Py_ssize_t m = 0; m < n && status == WALK_OK; m++) {
        const Head *head = &heads[m];
        if (head->text.p != NULL) {
            if (history_line(&lines, head, head->text) < 0) goto nomem;
            continue;
        }
        if (head->blocks.p == NULL) continue;
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body, text = {NULL, 0};
        uint32_t kind;
        int rc = 0;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            switch (kind) {
            case BLOCK_TEXT:
                if (read_text(body, &text) != WALK_OK) status = WALK_UNDECIDED;
                else if (history_line(&lines, head, text) < 0) goto nomem;
                break;
            case BLOCK_IMAGE:
            case BLOCK_AUDIO:
            case BLOCK_VIDEO:
                if (lines.len > 0)
                    status = gemini_lines_part(&lines, prompt, PyList_GET_SIZE(parts) == 0, 0,
                                               parts);
                else if (PyList_GET_SIZE(parts) == 0)
                    /* media first: the opening tag is a text part of its own */
                    status = gemini_lines_part(&lines, prompt, 1, 0, parts);
                if (status == WALK_OK) status = gemini_media_part(body, parts);
                break;
            default: status = passed_by(kind, body, 1) ? WALK_OK : WALK_UNDECIDED; break;
            }
        }
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status != WALK_OK) goto done;
    if (lines.len > 0) {
        status = gemini_lines_part(&lines, prompt, PyList_GET_SIZE(parts) == 0, 1, parts);
    } else if (PyList_GET_SIZE(parts) > 0) {
        status = gemini_text_part(Py_NewRef(s_history_close), parts);
    }
    if (status == WALK_OK && PyList_GET_SIZE(parts) > 0) {
        PyObject *keys[] = {k_role, k_parts};
        PyObject *values[] = {Py_NewRef(s_user), Py_NewRef(parts)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    goto done;
nomem:
    PyErr_NoMemory();
    status = WALK_ERROR;
done:
    buffer_free(&lines);
    Py_XDECREF(parts);
    return status;
}

static const History GEMINI_HISTORY = {gemini_turn, gemini_system, gemini_agents};

static PyObject *gemini_multi_agent(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_history("gemini_multi_agent", &GEMINI_HISTORY, args, nargs);
}

#endif
