/* OpenAI Chat Completions in AgentScope 1.0.21's fidelity (the Python
 * reference: providers/openai.py, `_CHAT` and `_finish_chat`): text parts,
 * tool calls with their arguments as `json.dumps` writes them, each tool
 * result as a `role: tool` message at once, thinking dropped with AgentScope's
 * warning. Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_OPENAI_H
#define AGENTSCOPE_CCORE_OPENAI_H

#include "walk.h"

#define OPENAI_NAMES(NAME)                                                                 \
    NAME(k_function, "function")                                                           \
    NAME(k_arguments, "arguments")                                                         \
    NAME(k_tool_calls, "tool_calls")                                                       \
    NAME(k_tool_call_id, "tool_call_id")                                                   \
    NAME(s_tool, "tool")                                                                   \
    NAME(s_function, "function")

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

static int openai_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind, Span body,
                        PyObject *parts, PyObject *calls) {
    Span text = {NULL, 0};
    switch (kind) {
    case BLOCK_TEXT:
        return read_text(body, &text) == WALK_OK ? openai_text_part(text, parts) : WALK_UNDECIDED;
    case BLOCK_TOOL_USE: return openai_tool_call(body, calls);
    case BLOCK_TOOL_RESULT: return openai_tool_message(body, walk->out);
    case BLOCK_THINKING:
        return read_thinking(body, &text) == WALK_OK
                   ? warn_at(walk, index, at, s_thinking, s_skipped_thinking)
                   : WALK_UNDECIDED;
    default: return WALK_UNDECIDED; /* media, hints, provider blocks: Python's */
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
            status = openai_block(walk, index, at++, kind, body, parts, calls);
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

#endif
