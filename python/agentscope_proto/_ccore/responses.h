/* OpenAI Responses in AgentScope 1.0.21's fidelity (the Python reference:
 * providers/openai_responses.py, `_CHAT` and `_finish_chat`, the parity
 * variant's multi-agent parts): a message's text and media parts as one
 * message item, its function calls and call outputs as items after it,
 * thinking and video dropped with AgentScope's warning. Audio, the role
 * AgentScope sees and the history lines are Chat Completions' (openai.h),
 * as the Python reference takes them from providers/openai.py. Part of
 * _ccore.c. */
#ifndef AGENTSCOPE_CCORE_RESPONSES_H
#define AGENTSCOPE_CCORE_RESPONSES_H

#include "openai.h"

/* Prefixed: every provider's names share the one compilation unit. */
#define RESPONSES_NAMES(NAME)                                                              \
    NAME(kr_call_id, "call_id")                                                            \
    NAME(kr_output, "output")                                                              \
    NAME(sr_input_text, "input_text")                                                      \
    NAME(sr_output_text, "output_text")                                                    \
    NAME(sr_input_image, "input_image")                                                    \
    NAME(sr_function_call, "function_call")                                                \
    NAME(sr_function_call_output, "function_call_output")

RESPONSES_NAMES(DECLARE_NAME)

static int init_responses_names(void) {
    RESPONSES_NAMES(INTERN_NAME)
    return 0;
}

/* `{"type": kind, "text": text}` (`input_text`, or an assistant's `output_text`). */
static int responses_text_part(PyObject *kind, Span text, PyObject *parts) {
    PyObject *keys[] = {k_type, k_text};
    PyObject *values[] = {Py_NewRef(kind), text_of(text)};
    return append_new(parts, dict_of(2, keys, values));
}

static PyObject *responses_text_kind(uint64_t role) {
    return role == ROLE_ASSISTANT ? sr_output_text : sr_input_text;
}

/* `{"type": "input_image", "image_url": "data:<type>;base64,..."}`
 * (`_format_openai_response_image_block`: the URL is the value itself). */
static int responses_image_part(Span block, PyObject *parts) {
    Media media;
    if (read_media(block, &media) != WALK_OK || !inline_media(&media)) return WALK_UNDECIDED;
    PyObject *url = data_url(&media);
    if (url == NULL) return WALK_ERROR;
    if (url == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {k_type, k_image_url};
    PyObject *values[] = {Py_NewRef(sr_input_image), url};
    return append_new(parts, dict_of(2, keys, values));
}

/* A `function_call` item (`_chat_tool_use`). */
static int responses_call(Span block, PyObject *trailing) {
    ToolUse use;
    if (read_tool_use(block, &use) != WALK_OK) return WALK_UNDECIDED;
    PyObject *arguments = arguments_text(use.input);
    if (arguments == NULL) return WALK_ERROR;
    if (arguments == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {k_type, kr_call_id, k_name, k_arguments};
    PyObject *values[] = {Py_NewRef(sr_function_call), text_of(use.id), text_of(use.name),
                          arguments};
    return append_new(trailing, dict_of(4, keys, values));
}

/* A `function_call_output` item (`_chat_tool_result`; a result with media,
 * which AgentScope may promote, is Python's). */
static int responses_call_output(Span block, PyObject *trailing) {
    ToolResult result;
    if (read_tool_result(block, &result) != WALK_OK) return WALK_UNDECIDED;
    PyObject *output = result_text(&result);
    if (output == NULL) return WALK_ERROR;
    if (output == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {k_type, kr_call_id, kr_output};
    PyObject *values[] = {Py_NewRef(sr_function_call_output), text_of(result.id), output};
    return append_new(trailing, dict_of(3, keys, values));
}

static int responses_block(Walk *walk, const Head *head, Py_ssize_t index, Py_ssize_t at,
                           uint32_t kind, Span body, PyObject *parts, PyObject *trailing) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK
                   ? responses_text_part(responses_text_kind(head->role), text, parts)
                   : WALK_UNDECIDED;
    case BLOCK_TOOL_USE: return responses_call(body, trailing);
    case BLOCK_TOOL_RESULT: return responses_call_output(body, trailing);
    case BLOCK_IMAGE: return responses_image_part(body, parts);
    case BLOCK_AUDIO: return openai_audio(body, head->role, parts);
    case BLOCK_THINKING:
    case BLOCK_VIDEO: return skip_block(walk, index, at, kind, body);
    default: return WALK_UNDECIDED; /* hints, data, provider blocks: Python's */
    }
}

/* One message: its message item when it has parts, then its function calls
 * and call outputs in block order (`_finish_chat`). */
static int responses_turn(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0), *trailing = PyList_New(0);
    int status = WALK_ERROR;
    if (parts == NULL || trailing == NULL) goto done;
    if (head->text.p != NULL) {
        status = responses_text_part(responses_text_kind(head->role), head->text, parts);
        if (status != WALK_OK) goto done;
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body;
        uint32_t kind;
        int rc;
        Py_ssize_t at = 0;
        while ((rc = next_block(&items, &kind, &body)) == 1) {
            status = responses_block(walk, head, index, at++, kind, body, parts, trailing);
            if (status != WALK_OK) goto done;
        }
        if (rc < 0) {
            status = WALK_UNDECIDED;
            goto done;
        }
    }
    status = WALK_OK;
    if (PyList_GET_SIZE(parts) > 0) {
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(role_name(head->role)), Py_NewRef(parts)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
    if (status == WALK_OK && PyList_GET_SIZE(trailing) > 0 &&
        PyList_SetSlice(walk->out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, trailing) < 0)
        status = WALK_ERROR;
done:
    Py_XDECREF(parts);
    Py_XDECREF(trailing);
    return status;
}

static PyObject *responses_chat(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    return run_walk("responses_chat", responses_turn, args, nargs);
}

/* -- OpenAIResponseMultiAgentFormatter --------------------------------------- */

/* The leading system message with its texts as `input_text` parts
 * (`_system_message`; its thinking is left out). */
static int responses_system(Walk *walk, const Head *head, Py_ssize_t index) {
    PyObject *parts = PyList_New(0);
    if (parts == NULL) return WALK_ERROR;
    int status = WALK_OK;
    if (head->text.p != NULL) {
        status = responses_text_part(sr_input_text, head->text, parts);
    } else if (head->blocks.p != NULL) {
        Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
        Span body, text = {NULL, 0};
        uint32_t kind;
        int rc;
        while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
            if (kind == BLOCK_TEXT && read_text(body, &text) == WALK_OK)
                status = responses_text_part(sr_input_text, text, parts);
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

/* The history text part: `prompt<history>\n` + the lines + `\n</history>`. */
static int responses_history_part(const Buffer *lines, PyObject *prompt, PyObject *content) {
    Py_ssize_t size;
    const char *head = PyUnicode_AsUTF8AndSize(prompt, &size);
    if (head == NULL) return WALK_ERROR;
    PyObject *text = NULL;
    Buffer whole;
    buffer_init(&whole);
    if (buffer_put(&whole, head, size) == 0 && buffer_put(&whole, "<history>\n", 10) == 0 &&
        buffer_put(&whole, lines->data, lines->len) == 0 &&
        buffer_put(&whole, "\n</history>", 11) == 0)
        text = PyUnicode_DecodeUTF8(whole.data, whole.len, NULL);
    else
        PyErr_NoMemory();
    buffer_free(&whole);
    PyObject *keys[] = {k_type, k_text};
    PyObject *values[] = {Py_NewRef(sr_input_text), text};
    return append_new(content, dict_of(2, keys, values));
}

/* One agent message's blocks into the run's lines, images and audio. */
static int responses_agent_blocks(const Head *head, Buffer *lines, int *any, PyObject *images,
                                  PyObject *audios) {
    Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
    Span body, text = {NULL, 0};
    uint32_t kind;
    int rc, status = WALK_OK;
    Media media;
    while (status == WALK_OK && (rc = next_block(&items, &kind, &body)) == 1) {
        switch (kind) {
        case BLOCK_TEXT:
            if (read_text(body, &text) != WALK_OK) {
                status = WALK_UNDECIDED;
            } else if (history_line(lines, head, text) < 0) {
                PyErr_NoMemory();
                status = WALK_ERROR;
            } else {
                *any = 1;
            }
            break;
        case BLOCK_IMAGE: status = responses_image_part(body, images); break;
        case BLOCK_AUDIO: status = openai_audio(body, head->role, audios); break;
        case BLOCK_THINKING:
            status = read_thinking(body, &text) == WALK_OK ? WALK_OK : WALK_UNDECIDED;
            break;
        case BLOCK_VIDEO:
            status = read_media(body, &media) == WALK_OK && inline_media(&media) ? WALK_OK
                                                                                  : WALK_UNDECIDED;
            break;
        default: status = WALK_UNDECIDED; break;
        }
    }
    return status == WALK_OK && rc < 0 ? WALK_UNDECIDED : status;
}

/* A run of agent messages as one user message (`_format_agent_group`): the
 * `name: text` lines in `<history>` tags behind the prompt as one
 * `input_text` part, then the run's images, then its audio (an assistant's
 * left out); thinking and video skipped silently. */
static int responses_agents(Walk *walk, const Head *heads, const Py_ssize_t *indexes,
                            Py_ssize_t n, PyObject *prompt) {
    Buffer lines;
    buffer_init(&lines);
    PyObject *images = PyList_New(0), *audios = PyList_New(0), *content = PyList_New(0);
    int status = WALK_ERROR, any = 0;
    if (images == NULL || audios == NULL || content == NULL) goto done;
    status = WALK_OK;
    for (Py_ssize_t m = 0; m < n && status == WALK_OK; m++) {
        const Head *head = &heads[m];
        if (head->text.p != NULL) {
            if (history_line(&lines, head, head->text) < 0) {
                PyErr_NoMemory();
                status = WALK_ERROR;
            }
            any = 1;
        } else if (head->blocks.p != NULL) {
            status = responses_agent_blocks(head, &lines, &any, images, audios);
        }
    }
    if (status != WALK_OK) goto done;
    if (any && (status = responses_history_part(&lines, prompt, content)) != WALK_OK) goto done;
    if (PyList_SetSlice(content, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, images) < 0 ||
        PyList_SetSlice(content, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, audios) < 0) {
        status = WALK_ERROR;
        goto done;
    }
    if (PyList_GET_SIZE(content) > 0) {
        PyObject *keys[] = {k_role, k_content};
        PyObject *values[] = {Py_NewRef(s_user), Py_NewRef(content)};
        status = append_new(walk->out, dict_of(2, keys, values));
    }
done:
    buffer_free(&lines);
    Py_XDECREF(images);
    Py_XDECREF(audios);
    Py_XDECREF(content);
    return status;
}

static const History RESPONSES_HISTORY = {responses_turn, responses_system, responses_agents};

static PyObject *responses_multi_agent(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs) {
    return run_history("responses_multi_agent", &RESPONSES_HISTORY, args, nargs);
}

#endif
