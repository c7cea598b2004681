/* OpenAI Chat Completions in AgentScope 1.0.21's fidelity (the Python
 * reference: providers/openai.py, `_CHAT` and `_finish_chat`): text parts,
 * tool calls with their arguments as `json.dumps` writes them, each tool
 * result as a `role: tool` message at once, thinking dropped with AgentScope's
 * warning. Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_OPENAI_H
#define AGENTSCOPE_CCORE_OPENAI_H

#include "history.h"

#define OPENAI_NAMES(NAME)                                                                 \
    NAME(k_function, "function")                                                           \
    NAME(k_arguments, "arguments")                                                         \
    NAME(k_tool_calls, "tool_calls")                                                       \
    NAME(k_tool_call_id, "tool_call_id")                                                   \
    NAME(k_image_url, "image_url")                                                         \
    NAME(k_url, "url")                                                                     \
    NAME(k_input_audio, "input_audio")                                                     \
    NAME(k_data, "data")                                                                   \
    NAME(k_format, "format")                                                               \
    NAME(s_tool, "tool")                                                                   \
    NAME(s_function, "function")                                                           \
    NAME(s_image_url, "image_url")                                                         \
    NAME(s_input_audio, "input_audio")                                                     \
    NAME(s_wav, "wav")                                                                     \
    NAME(s_mp3, "mp3")

OPENAI_NAMES(DECLARE_NAME)

static int init_openai_names(void) {
    OPENAI_NAMES(INTERN_NAME)
    return 0;
}

/* The role AgentScope's formatters see (1.x carries tool results in system). */
static PyObject *role_name(uint64_t role) {
    return role == ROLE_USER ? s_user : role == ROLE_ASSISTANT ? s_assistant : s_system;
}

static int openai_text_part(Span text, PyObject *parts) {
    PyObject *keys[] = {k_type, k_text};
    PyObject *values[] = {Py_NewRef(s_text), text_of(text)};
    return append_new(parts, dict_of(2, keys, values));
}

/* A `tool_calls` entry. */
static int openai_tool_call(Span block, PyObject *calls) {
    ToolUse use;
    if (read_tool_use(block, &use) != WALK_OK) return WALK_UNDECIDED;
    PyObject *arguments = arguments_text(use.input);
    if (arguments == NULL) return WALK_ERROR;
    if (arguments == Py_None) return WALK_UNDECIDED;
    PyObject *fkeys[] = {k_name, k_arguments};
    PyObject *fvalues[] = {text_of(use.name), arguments};
    PyObject *keys[] = {k_id, k_type, k_function};
    PyObject *values[] = {text_of(use.id), Py_NewRef(s_function), dict_of(2, fkeys, fvalues)};
    return append_new(calls, dict_of(3, keys, values));
}

/* A tool result's `role: tool` message. */
static int openai_tool_message(Span block, PyObject *out) {
    ToolResult result;
    if (read_tool_result(block, &result) != WALK_OK) return WALK_UNDECIDED;
    PyObject *content = result_text(&result);
    if (content == NULL) return WALK_ERROR;
    if (content == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {k_role, k_tool_call_id, k_content, k_name};
    PyObject *values[] = {Py_NewRef(s_tool), text_of(result.id), content, text_of(result.name)};
    return append_new(out, dict_of(4, keys, values));
}

static int span_is(Span s, const char *text) {
    Py_ssize_t n = (Py_ssize_t)strlen(text);
    return s.n == n && memcmp(s.p, text, n) == 0;
}

/* `{"type": "image_url", "image_url": {"url": "data:<type>;base64,..."}}`. */
static int openai_image_part(Span block, PyObject *parts) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    PyObject *url = data_url(&media);
    if (url == NULL) return WALK_ERROR;
    if (url == Py_None) return WALK_UNDECIDED;
    PyObject *ukeys[] = {k_url};
    PyObject *uvalues[] = {url};
    PyObject *keys[] = {k_type, k_image_url};
    PyObject *values[] = {Py_NewRef(s_image_url), dict_of(1, ukeys, uvalues)};
    return append_new(parts, dict_of(2, keys, values));
}

/* `{"type": "input_audio", "input_audio": {"data": ..., "format": ...}}`:
 * wav and mp3 only (any other type is an error: Python's to raise). */
static int openai_audio_part(const Media *media, PyObject *parts) {
    PyObject *format = span_is(media->media_type, "audio/wav")   ? s_wav
                       : span_is(media->media_type, "audio/mp3") ? s_mp3
                                                                  : NULL;
    if (format == NULL) return WALK_UNDECIDED;
    PyObject *data = base64_text((Span){NULL, 0}, media, (Span){NULL, 0});
    if (data == NULL) return WALK_ERROR;
    if (data == Py_None) return WALK_UNDECIDED;
    PyObject *akeys[] = {k_data, k_format};
    PyObject *avalues[] = {data, Py_NewRef(format)};
    PyObject *keys[] = {k_type, k_input_audio};
    PyObject *values[] = {Py_NewRef(s_input_audio), dict_of(2, akeys, avalues)};
    return append_new(parts, dict_of(2, keys, values));
}

/* Audio of a message: a user's goes out, an assistant's (a model's own
 * output) is dropped unchecked and without a warning. */
static int openai_audio(Span block, uint64_t role, PyObject *parts) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    return role == ROLE_ASSISTANT ? WALK_OK : openai_audio_part(&media, parts);
}

static int openai_block(Walk *walk, const Head *head, Py_ssize_t index, Py_ssize_t at,
                        uint32_t kind, Span body, PyObject *parts, PyObject *calls) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK ? openai_text_part(text, parts) : WALK_UNDECIDED;
    case BLOCK_TOOL_USE: return openai_tool_call(body, calls);
    case BLOCK_TOOL_RESULT: return openai_tool_message(body, walk->out);
    case BLOCK_IMAGE: return openai_image_part(body, parts);
    case BLOCK_AUDIO: return openai_audio(body, head->role, parts);
    case BLOCK_THINKING:
    case BLOCK_VIDEO: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* One message: its tool results go out as they come, then the message itself
 * when it has parts or tool calls (`_finish_chat`). */
static int openai_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0), *calls = PyList_New(0);
    int status = WALK_ERROR;
    if (parts == NULL || calls == NULL) goto done;
    if (head->text.p != NULL) {
        if ((status = openai_text_part(head->text, parts)) != WALK_OK) goto done;
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while ((rc = next_block(&items, &kind, &body)) == 1) {
            status = openai_block(walk, head, index, at++, kind, body, parts, calls);
            if (status != WALK_OK) goto done;
        }
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = WALK_OK;
    Py_ssize_t nparts = PyList_GET_SIZE(parts), ncalls = PyList_GET_SIZE(calls);
    if (nparts || ncalls) {
        PyObject *keys[] = {k_role, k_name, k_content, k_tool_calls};
        PyObject *values[] = {Py_NewRef(role_name(head->role)), text_of(head->name),
                              Py_NewRef(nparts ? parts : Py_None), NULL};
        if (ncalls) values[3] = Py_NewRef(calls);
        status = append_new(walk->out, dict_of(ncalls ? 4 : 3, keys, values));
    }
done:
    Py_XDECREF(parts);
    Py_XDECREF(calls);
    return status;
}

static PyObject *openai_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("openai_chat", openai_turn, args, nargs);
}

/* -- OpenAIMultiAgentFormatter ------------------------------------------------- */

/* The leading system message with its text blocks (`system_blocks`). */
static int openai_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return WALK_ERROR;
    int status = WALK_OK;
    if (head->text.p != NULL) {
        status = openai_text_part(head->text, parts);
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body, text = {NULL, 0};
        uint32_t kind;
        int rc;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            if (kind == BLOCK_TEXT && read_text(body, &text) == WALK_OK)
                status = openai_text_part(text, parts);
            else if (kind != BLOCK_THINKING || read_thinking(body, &text) != WALK_OK)
                status = WALK_UNDECIDED;
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

/* A run of agent messages as one user message (`_format_agent_message`): the
 * `name: text` lines in `<history>` tags behind the prompt, then the run's
 * images, then its audio (an assistant's left out); other kinds skipped. */
static int openai_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes, Py_ssize_t n,
                         PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    PyObject *images = PyList_New(0), *audios = PyList_New(0), *content = PyList_New(0);
    int status = WALK_ERROR, any = 0;
    if (images == NULL || audios == NULL || content == NULL) goto done;
    for (Py_ssize_t m = 0; m < n; m++) {
        const Head *head = &heads[m];
        status = WALK_OK;
        if (head->text.p != NULL) {
            if (history_line(&lines, head, head->text) < 0) goto nomem;
            any = 1;
            continue;
        }
        if (head->blocks.p == NULL) continue;
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body, text = {NULL, 0};
        uint32_t kind;
        int rc;
        Media media;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            switch (kind) {
            case BLOCK_TEXT:
                if (read_text(body, &text) != WALK_OK) status = WALK_UNDECIDED;
                else if (history_line(&lines, head, text) < 0) goto nomem;
                else any = 1;
                break;
            case BLOCK_IMAGE: status = openai_image_part(body, images); break;
            case BLOCK_AUDIO: status = openai_audio(body, head->role, audios); break;
            case BLOCK_THINKING:
                status = read_thinking(body, &text) == WALK_OK ? WALK_OK : WALK_UNDECIDED;
                break;
            case BLOCK_VIDEO:
                status = read_media(body, &media) == WALK_OK && inline_media(&media)
                             ? WALK_OK
                             : WALK_UNDECIDED;
                break;
            default: status = WALK_UNDECIDED; break;
            }
        }
        if (status != WALK_OK) goto done;
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    if (any) {
        Py_ssize_t size;
        const char *head = PyUnicode_AsUTF8AndSize(prompt, &size);
        PyObject *text = NULL;
        Buffer whole;
        buffer_init(&whole);
        if (head != NULL && buffer_put(&whole, head, size) == 0 &&
            buffer_put(&whole, "<history>\n", 10) == 0 &&
            buffer_put(&whole, lines.data, lines.len) == 0 &&
            buffer_put(&whole, "\n</history>", 11) == 0)
            text = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
        else if (head != NULL)
            PyErr_NoMemory();
        buffer_free(&whole);
        PyObject *keys[] = {k_type, k_text};
        PyObject *values[] = {Py_NewRef(s_text), text};
        if ((status = append_new(content, dict_of(2, keys, values))) != WALK_OK) goto done;
    }
    if (PyList_SetSlice(content, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, images) < 0 ||
        PyList_SetSlice(content, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, audios) < 0) {
        status = WALK_ERROR;
        goto done;
    }
    status = WALK_OK;
    if (PyList_GET_SIZE(content) > 0) {
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(s_user), Py_NewRef(content)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    goto done;
nomem:
    PyErr_NoMemory();
    status = WALK_ERROR;
done:
    buffer_free(&lines);
    Py_XDECREF(images);
    Py_XDECREF(audios);
    Py_XDECREF(content);
    return status;
}

static const History OPENAI_HISTORY = {openai_turn, openai_system, openai_agents};

static PyObject *openai_multi_agent(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_history("openai_multi_agent", &OPENAI_HISTORY, args, nargs);
}

#endif
