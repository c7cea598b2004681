/* Anthropic Messages in AgentScope 1.0.21's fidelity (the Python reference:
 * providers/anthropic.py, `_CHAT`, `_finish_chat`, `_format_history`): text
 * and thinking blocks copied as their dicts, tool calls with their input as
 * JSON values, each tool result as a user message at once, inline images as
 * base64 sources, audio and video dropped with AgentScope's warning. A block
 * copied whole is taken only in the plain form whose dict the core knows
 * (no ids, times or extra keys). Names here carry an `ant_` prefix: one
 * compilation unit holds every provider. Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_ANTHROPIC_H
#define AGENTSCOPE_CCORE_ANTHROPIC_H

#include "history.h"

#define ANTHROPIC_NAMES(NAME)                                                              \
    NAME(ant_k_input, "input")                                                             \
    NAME(ant_k_source, "source")                                                           \
    NAME(ant_k_media_type, "media_type")                                                   \
    NAME(ant_k_data, "data")                                                               \
    NAME(ant_k_signature, "signature")                                                     \
    NAME(ant_k_tool_use_id, "tool_use_id")                                                 \
    NAME(ant_s_tool_use, "tool_use")                                                       \
    NAME(ant_s_tool_result, "tool_result")                                                 \
    NAME(ant_s_base64, "base64")                                                           \
    NAME(ant_s_closing, "</history>")

ANTHROPIC_NAMES(DECLARE_NAME)

static int init_anthropic_names(void) {
    ANTHROPIC_NAMES(INTERN_NAME)
    return 0;
}

/* ThinkingBlock's signature (the one field besides the thinking a copied
 * block may carry here). */
enum { ANT_THINKING_SIGNATURE = 2 };

/* `{"type": "text", "text": text}` (the text taken). */
static int anthropic_text_value(PyObject *text, PyObject *parts) {
    PyObject *keys[] = {k_type, k_text};
    PyObject *values[] = {Py_NewRef(s_text), text};
    return append_new(parts, dict_of(2, keys, values));
}

static int anthropic_text_part(Span text, PyObject *parts) {
    return anthropic_text_value(text_of(text), parts);
}

/* A thinking block's dict as the view has it, `{"type", "thinking",
 * "signature"?}` (an unset thinking is ""): only those fields, each once;
 * NULL `parts`: the block checked, nothing written. */
static int anthropic_thinking(Span block, PyObject *parts) {
    Reader r = {block.p, block.p + block.n};
    Span bytes, thinking = {NULL, 0}, signature = {NULL, 0};
    uint32_t number;
    uint64_t value;
    int rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        Span *slot = number == THINKING_THINKING        ? &thinking
                     : number == ANT_THINKING_SIGNATURE ? &signature
                                                        : NULL;
        if (slot == NULL || slot->p != NULL) return WALK_UNDECIDED;
        *slot = bytes;
    }
    if (rc < 0) return WALK_UNDECIDED;
    if (parts == NULL) return WALK_OK;
    PyObject *keys[] = {k_type, s_thinking, ant_k_signature};
    PyObject *values[] = {Py_NewRef(s_thinking),
                          thinking.p != NULL ? text_of(thinking) : Py_NewRef(s_empty), NULL};
    if (signature.p != NULL) values[2] = text_of(signature);
    return append_new(parts, dict_of(signature.p != NULL ? 3 : 2, keys, values));
}

/* A media block holding its source alone, inline with its media type, as
 * the view's dict: `{"type": kind, "source": {"type": "base64", "media_type",
 * "data"}}` (`*dict`, a new reference). An id, a name or times would be keys
 * of a copied block: Python's. */
static int anthropic_media(Span block, PyObject *kind, PyObject **dict) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number != MEDIA_SOURCE) return WALK_UNDECIDED;
    }
    Media media;
    if (rc < 0 || read_media(block, &media) != WALK_OK || !inline_media(&media))
        return WALK_UNDECIDED;
    PyObject *data = base64_text((Span){NULL, 0}, &media, (Span){NULL, 0});
    if (data == NULL) return WALK_ERROR;
    if (data == Py_None) return WALK_UNDECIDED;
    PyObject *skeys[] = {k_type, ant_k_media_type, ant_k_data};
    PyObject *svalues[] = {Py_NewRef(ant_s_base64), text_of(media.media_type), data};
    PyObject *keys[] = {k_type, ant_k_source};
    PyObject *values[] = {Py_NewRef(kind), dict_of(3, skeys, svalues)};
    *dict = dict_of(2, keys, values);
    return *dict == NULL ? WALK_ERROR : WALK_OK;
}

static int anthropic_media_part(Span block, PyObject *kind, PyObject *parts) {
    PyObject *dict = NULL;
    int status = anthropic_media(block, kind, &dict);
    return status == WALK_OK ? append_new(parts, dict) : status;
}

/* `{"id", "type": "tool_use", "name", "input"}`, the input as JSON values. */
static int anthropic_tool_use(Span block, PyObject *parts) {
    ToolUse use;
    if (read_tool_use(block, &use) != WALK_OK) return WALK_UNDECIDED;
    PyObject *input = json_value_of(use.input);
    if (input == NULL) return WALK_ERROR;
    if (input == JSON_PYTHON_DECIDES) return WALK_UNDECIDED;
    PyObject *keys[] = {k_id, k_type, k_name, ant_k_input};
    PyObject *values[] = {text_of(use.id), Py_NewRef(ant_s_tool_use), text_of(use.name), input};
    return append_new(parts, dict_of(4, keys, values));
}

/* A tool result's content (`_format_tool_result`): its text as one text
 * block ("" without output), or its blocks as the view has them (text and
 * inline media; anything else Python's). */
static int anthropic_result_content(const ToolResult *result, PyObject *content) {
    if (result->blocks.p == NULL)
        return result->text.p != NULL ? anthropic_text_part(result->text, content)
                                      : anthropic_text_value(Py_NewRef(s_empty), content);
    Reader items = {result->blocks.p, result->blocks.p + result->blocks.n};
    Span body, text = {NULL, 0};
    uint32_t kind;
    int rc, status = WALK_OK;
    while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
        switch (kind) {
        case BLOCK_TEXT:
            status = read_text(body, &text) == WALK_OK ? anthropic_text_part(text, content)
                                                       : WALK_UNDECIDED;
            break;
        case BLOCK_IMAGE: status = anthropic_media_part(body, s_image, content); break;
        case BLOCK_AUDIO: status = anthropic_media_part(body, s_audio, content); break;
        case BLOCK_VIDEO: status = anthropic_media_part(body, s_video, content); break;
        default: status = WALK_UNDECIDED; break;
        }
    }
    return status == WALK_OK && rc < 0 ? WALK_UNDECIDED : status;
}

/* A tool result's own user message, out at once. */
static int anthropic_tool_result(Span block, PyObject *out) {
    ToolResult result;
    if (read_tool_result(block, &result) != WALK_OK) return WALK_UNDECIDED;
    PyObject *content = PyList_New(0);
    if (content == NULL) return WALK_ERROR;
    int status = anthropic_result_content(&result, content);
    if (status != WALK_OK) {
        Py_DECREF(content);
        return status;
    }
    PyObject *rkeys[] = {k_type, ant_k_tool_use_id, k_content};
    PyObject *rvalues[] = {Py_NewRef(ant_s_tool_result), text_of(result.id), content};
    PyObject *results = PyList_New(0);
    if (results == NULL) {
        Py_DECREF(rvalues[0]);
        Py_XDECREF(rvalues[1]);
        Py_DECREF(content);
        return WALK_ERROR;
    }
    status = append_new(results, dict_of(3, rkeys, rvalues));
    if (status != WALK_OK) {
        Py_DECREF(results);
        return status;
    }
    PyObject *keys[] = {k_role, k_content};
    PyObject *values[] = {Py_NewRef(s_user), results};
    return append_new(out, dict_of(2, keys, values));
}

static int anthropic_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind,
                           Span body, PyObject *parts) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK ? anthropic_text_part(text, parts)
                                                 : WALK_UNDECIDED;
    case BLOCK_THINKING: return anthropic_thinking(body, parts);
    case BLOCK_TOOL_USE: return anthropic_tool_use(body, parts);
    case BLOCK_TOOL_RESULT: return anthropic_tool_result(body, walk->out);
    case BLOCK_IMAGE: return anthropic_media_part(body, s_image, parts);
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* One message: its tool results go out as they come, then the message with
 * its parts, if any (`_finish_chat`). A system message keeps its role only
 * first in the list formatted (else it is a user's): `first` says whether it
 * is (-1: not known here, Python's if it matters). */
static int anthropic_turn_at(Walk *walk, const Head *head, Py_ssize_t index, int first) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return WALK_ERROR;
    int status = WALK_OK;
    if (head->text.p != NULL) {
        status = anthropic_text_part(head->text, parts);
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1)
            status = anthropic_block(walk, index, at++, kind, body, parts);
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status == WALK_OK && PyList_GET_SIZE(parts) > 0) {
        PyObject *role = head->role == ROLE_USER        ? s_user
                         : head->role == ROLE_ASSISTANT ? s_assistant
                         : first == 1                   ? s_system
                         : first == 0                   ? s_user
                                                        : NULL;
        if (role == NULL) {
            status = WALK_UNDECIDED;
        } else {
            PyObject *keys[] = {k_role, k_content};
            PyObject *values[] = {Py_NewRef(role), Py_NewRef(parts)};
            status = append_new(walk->out, dict_of(2, keys, values));
        }
    }
    Py_DECREF(parts);
    return status;
}

/* The chat walk: a message's place in the list is its index. */
static int anthropic_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    return anthropic_turn_at(walk, head, index, index == 0);
}

static PyObject *anthropic_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("anthropic_chat", anthropic_turn, args, nargs);
}

/* -- AnthropicMultiAgentFormatter -------------------------------------------------- */

/* A message of a tool run: each run is formatted as a list of its own, and
 * the turn is not told whether it starts one (a system message with parts:
 * Python's). */
static int anthropic_tool_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    return anthropic_turn_at(walk, head, index, -1);
}

/* The leading system message with its text blocks (`system_blocks`); its
 * other blocks are left out, once known to make a view without Python. */
static int anthropic_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return WALK_ERROR;
    int status = WALK_OK;
    if (head->text.p != NULL) {
        status = anthropic_text_part(head->text, parts);
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body, text = {NULL, 0};
        uint32_t kind;
        int rc;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            switch (kind) {
            case BLOCK_TEXT:
                status = read_text(body, &text) == WALK_OK ? anthropic_text_part(text, parts)
                                                           : WALK_UNDECIDED;
                break;
            case BLOCK_THINKING: status = anthropic_thinking(body, NULL); break;
            case BLOCK_IMAGE:
            case BLOCK_AUDIO:
            case BLOCK_VIDEO: status = (passed_by(kind, body, 1) ? WALK_OK : WALK_UNDECIDED); break;
            default: status = WALK_UNDECIDED; break;
            }
        }
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status == WALK_OK) {
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(s_system), Py_NewRef(parts)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    Py_DECREF(parts);
    return status;
}

/* The lines so far as one text part, `{"text", "type": "text"}` (the order
 * `_format_history` writes), with the history's opening (the first part) and
 * closing (the last); the lines start again. */
static int anthropic_lines_part(Buffer *lines, PyObject *blocks, PyObject *prompt, int last) {
    Buffer whole;
    buffer_init(&whole);
    PyObject *text = NULL;
    int ok = 1;
    if (PyList_GET_SIZE(blocks) == 0) {
        Py_ssize_t size;
        const char *head = PyUnicode_AsUTF8AndSize(prompt, &size);
        if (head == NULL) {
            buffer_free(&whole);
            return WALK_ERROR;
        }
        ok = buffer_put(&whole, head, size) == 0 && buffer_put(&whole, "<history>\n", 10) == 0;
    }
    ok = ok && buffer_put(&whole, lines->data, lines->len) == 0;
    if (last) ok = ok && buffer_put(&whole, "\n</history>", 11) == 0;
    if (ok) text = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
    else PyErr_NoMemory();
    buffer_free(&whole);
    lines->len = 0;
    PyObject *keys[] = {k_text, k_type};
    PyObject *values[] = {text, Py_NewRef(s_text)};
    return append_new(blocks, dict_of(2, keys, values));
}

/* An image of the history, where it stands: the lines before it go first
 * (or the history's opening, when nothing does). */
static int anthropic_history_image(Span body, Buffer *lines, PyObject *blocks, PyObject *prompt) {
    PyObject *image = NULL;
    int status = anthropic_media(body, s_image, &image);
    if (status != WALK_OK) return status;
    if (lines->len > 0) {
        status = anthropic_lines_part(lines, blocks, prompt, 0);
    } else if (PyList_GET_SIZE(blocks) == 0) {
        status = anthropic_text_value(PyUnicode_FromFormat("%U<history>\n", prompt), blocks);
    }
    if (status != WALK_OK) {
        Py_DECREF(image);
        return status;
    }
    return append_new(blocks, image);
}

/* A run of agent messages as one user message (`_format_history`): the
 * `name: text` lines in `<history>` tags behind the prompt, images where
 * they occur; other kinds left out without a warning. */
static int anthropic_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes,
                            Py_ssize_t n, PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    PyObject *blocks = PyList_New(0);
    int status = blocks == NULL ? WALK_ERROR : WALK_OK;
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
        int rc;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            switch (kind) {
            case BLOCK_TEXT:
                if (read_text(body, &text) != WALK_OK) status = WALK_UNDECIDED;
                else if (history_line(&lines, head, text) < 0) goto nomem;
                break;
            case BLOCK_IMAGE:
                status = anthropic_history_image(body, &lines, blocks, prompt);
                break;
            case BLOCK_THINKING: status = anthropic_thinking(body, NULL); break;
            case BLOCK_AUDIO:
            case BLOCK_VIDEO: status = (passed_by(kind, body, 1) ? WALK_OK : WALK_UNDECIDED); break;
            default: status = WALK_UNDECIDED; break;
            }
        }
        if (status == WALK_OK && rc < 0) status = WALK_UNDECIDED;
    }
    if (status != WALK_OK) goto done;
    if (lines.len > 0) status = anthropic_lines_part(&lines, blocks, prompt, 1);
    else if (PyList_GET_SIZE(blocks) > 0)
        status = anthropic_text_value(Py_NewRef(ant_s_closing), blocks);
    if (status == WALK_OK && PyList_GET_SIZE(blocks) > 0) {
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(s_user), Py_NewRef(blocks)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    goto done;
nomem:
    PyErr_NoMemory();
    status = WALK_ERROR;
done:
    buffer_free(&lines);
    Py_XDECREF(blocks);
    return status;
}

static const History ANTHROPIC_HISTORY = {anthropic_tool_turn, anthropic_system,
                                          anthropic_agents};

static PyObject *anthropic_multi_agent(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs) {
    return run_history("anthropic_multi_agent", &ANTHROPIC_HISTORY, args, nargs);
}

#endif
