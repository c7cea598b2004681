/* Ollama `/api/chat` in AgentScope 1.0.21's fidelity (the Python reference:
 * providers/ollama.py, `_CHAT`, `_finish_chat` and `_format_history`): a
 * message's texts joined into one string, its images as base64 text in
 * `images`, tool calls with their arguments as objects (the JSON read back
 * into Python values), each tool result as a `role: tool` message at once
 * (openai.h's: both are `_tools.tool_message`; its tool-call names too),
 * thinking, audio and video dropped with AgentScope's warning. Part of
 * _ccore.c. */
#ifndef AGENTSCOPE_CCORE_OLLAMA_H
#define AGENTSCOPE_CCORE_OLLAMA_H

#include "openai.h"

#define OLLAMA_NAMES(NAME)                                                                 \
    NAME(k_images, "images")

OLLAMA_NAMES(DECLARE_NAME)

static int init_ollama_names(void) {
    OLLAMA_NAMES(INTERN_NAME)
    return 0;
}

/* An image's base64 text (`_image_data`), appended to `images`: inline
 * media only (a URL is read or downloaded: Python's). */
static int ollama_image(Span block, PyObject *images) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    PyObject *data = base64_text((Span){NULL, 0}, &media, (Span){NULL, 0});
    if (data == NULL) return WALK_ERROR;
    if (data == Py_None) return WALK_UNDECIDED;
    return append_new(images, data);
}

/* A `tool_calls` entry: the arguments as the object the input holds. */
static int ollama_tool_call(Span block, PyObject *calls) {
    ToolUse use;
    if (read_tool_use(block, &use) != WALK_OK) return WALK_UNDECIDED;
    PyObject *arguments = json_value_of(use.input);
    if (arguments == NULL) return WALK_ERROR;
    if (arguments == JSON_PYTHON_DECIDES) return WALK_UNDECIDED;
    PyObject *fkeys[] = {k_name, k_arguments};
    PyObject *fvalues[] = {text_of(use.name), arguments};
    PyObject *keys[] = {k_id, k_type, k_function};
    PyObject *values[] = {text_of(use.id), Py_NewRef(s_function), dict_of(2, fkeys, fvalues)};
    return append_new(calls, dict_of(3, keys, values));
}

/* One text of the turn, joined to the others with "\n". */
static int ollama_text(Buffer *texts, Py_ssize_t *count, Span text) {
    if ((*count)++ > 0 && buffer_put(texts, "\n", 1) < 0) return -1;
    return buffer_put(texts, text.p, text.n);
}

static int ollama_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind, Span body,
                        Buffer *texts, Py_ssize_t *count, PyObject *calls, PyObject *images) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        if (read_text(body, &text) != WALK_OK) return WALK_UNDECIDED;
        if (ollama_text(texts, count, text) < 0) {
            PyErr_NoMemory();
            return WALK_ERROR;
        }
        return WALK_OK;
    case BLOCK_TOOL_USE: return ollama_tool_call(body, calls);
    case BLOCK_TOOL_RESULT: return openai_tool_message(body, walk->out);
    case BLOCK_IMAGE: return ollama_image(body, images);
    case BLOCK_THINKING:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* One message: its tool results go out as they come, then the message itself
 * (`_finish_chat`) when its joined text is not empty or it has tool calls or
 * images. */
static int ollama_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    Buffer texts;
    buffer_init(&texts);
    Py_ssize_t count = 0;
    PyObject *calls = PyList_New(0), *images = PyList_New(0);
    int status = WALK_ERROR;
    if (calls == NULL || images == NULL) goto done;
    if (head->text.p != NULL) {
        if (ollama_text(&texts, &count, head->text) < 0) goto nomem;
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while ((rc = next_block(&items, &kind, &body)) == 1) {
            status = ollama_block(walk, index, at++, kind, body, &texts, &count, calls, images);
            if (status != WALK_OK) goto done;
        }
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = WALK_OK;
    Py_ssize_t ncalls = PyList_GET_SIZE(calls), nimages = PyList_GET_SIZE(images);
    if (texts.len || ncalls || nimages) {
        PyObject *keys[4] = {k_role, k_content};
        PyObject *values[4] = {
            Py_NewRef(role_name(head->role)),
            texts.len ? PyUnicode_DecodeUTF8(texts.data, texts.len, NULL) : Py_NewRef(Py_None)};
        int n = 2;
        if (ncalls) {
            keys[n] = k_tool_calls;
            values[n++] = Py_NewRef(calls);
        }
        if (nimages) {
            keys[n] = k_images;
            values[n++] = Py_NewRef(images);
        }
        status = append_new(walk->out, dict_of(n, keys, values));
    }
    goto done;
nomem:
    PyErr_NoMemory();
    status = WALK_ERROR;
done:
    buffer_free(&texts);
    Py_XDECREF(calls);
    Py_XDECREF(images);
    return status;
}

static PyObject *ollama_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("ollama_chat", ollama_turn, args, nargs);
}

/* -- OllamaMultiAgentFormatter ------------------------------------------------ */

/* The leading system message as one string (`system_text`: its text blocks
 * joined, None without any); its thinking and inline media are read by
 * nothing, anything else is Python's. */
static int ollama_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *content = text_content(head, 1);
    if (content == NULL) return WALK_ERROR;
    if (content == Py_NotImplemented) return WALK_UNDECIDED;
    PyObject *keys[] = {k_role, k_content};
    PyObject *values[] = {Py_NewRef(s_system), content};
    return append_new(walk->out, dict_of(2, keys, values));
}

/* One part of a history run, joined to the others with "\n": a `name: text`
 * line, or (`head` NULL) the empty part an image leaves where it sat. */
static int ollama_part(Buffer *lines, Py_ssize_t *count, const Head *head, Span text) {
    if ((*count)++ > 0 && buffer_put(lines, "\n", 1) < 0) return -1;
    if (head == NULL) return 0;
    if (buffer_put(lines, head->name.p, head->name.n) < 0 || buffer_put(lines, ": ", 2) < 0)
        return -1;
    return buffer_put(lines, text.p, text.n);
}

/* The history message of a run: `lines` (its parts joined) in `<history>`
 * tags behind the prompt, and its images. */
static int ollama_history_message(Walk *walk, PyObject *prompt, const Buffer *lines,
                                  int image_first, PyObject *images) {
    Py_ssize_t size;
    const char *opening = PyUnicode_AsUTF8AndSize(prompt, &size);
    if (opening == NULL) return WALK_ERROR;
    Buffer whole;
    buffer_init(&whole);
    PyObject *content = NULL;
    /* An image first: its empty part follows the opening tag's own part. */
    if (buffer_put(&whole, opening, size) == 0 && buffer_put(&whole, "<history>\n", 10) == 0 &&
        (!image_first || buffer_put(&whole, "\n", 1) == 0) &&
        buffer_put(&whole, lines->data, lines->len) == 0 &&
        buffer_put(&whole, "\n</history>", 11) == 0)
        content = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
    else
        PyErr_NoMemory();
    buffer_free(&whole);
    PyObject *keys[] = {k_role, k_content, k_images};
    PyObject *values[] = {Py_NewRef(s_user), content, NULL};
    int n = 2;
    if (PyList_GET_SIZE(images) > 0) values[n++] = Py_NewRef(images);
    return append_new(walk->out, dict_of(n, keys, values));
}

/* A run of agent messages as one user message (`_format_history`): each text
 * a `name: text` line, each image its base64 text in `images` and an empty
 * line where it sat (the parts joined with "\n"), all in `<history>` tags
 * behind the prompt (an image first: an empty line more after the opening
 * tag); thinking, audio and video skipped silently. */
static int ollama_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes, Py_ssize_t n,
                         PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    PyObject *images = PyList_New(0);
    Py_ssize_t count = 0;
    int status = WALK_ERROR, image_first = 0;
    if (images == NULL) goto done;
    for (Py_ssize_t m = 0; m < n; m++) {
        const Head *head = &heads[m];
        status = WALK_OK;
        if (head->text.p != NULL) {
            if (ollama_part(&lines, &count, head, head->text) < 0) goto nomem;
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
                if (read_text(body, &text) != WALK_OK) {
                    status = WALK_UNDECIDED;
                    break;
                }
                if (ollama_part(&lines, &count, head, text) < 0) goto nomem;
                break;
            case BLOCK_IMAGE:
                status = ollama_image(body, images);
                if (status != WALK_OK) break;
                if (count == 0) image_first = 1;
                if (ollama_part(&lines, &count, NULL, text) < 0) goto nomem;
                break;
            case BLOCK_THINKING:
                status = read_thinking(body, &text) == WALK_OK ? WALK_OK : WALK_UNDECIDED;
                break;
            case BLOCK_AUDIO:
            case BLOCK_VIDEO: status = (passed_by(kind, body, 1) ? WALK_OK : WALK_UNDECIDED); break;
            default: status = WALK_UNDECIDED; break;
            }
        }
        if (status != WALK_OK) goto done;
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = count ? ollama_history_message(walk, prompt, &lines, image_first, images) : WALK_OK;
    goto done;
nomem:
    PyErr_NoMemory();
    status = WALK_ERROR;
done:
    buffer_free(&lines);
    Py_XDECREF(images);
    return status;
}

static const History OLLAMA_HISTORY = {ollama_turn, ollama_system, ollama_agents};

static PyObject *ollama_multi_agent(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_history("ollama_multi_agent", &OLLAMA_HISTORY, args, nargs);
}

#endif
