/* AgentScope's multi-agent formatters (`TruncatedFormatterBase._format`, the
 * Python reference: providers/_history.py): a leading system message, each
 * run of messages with tool blocks through the chat walk's turn, each run of
 * the others folded into one history message (the first run behind the
 * conversation history prompt). What differs per provider comes in as a
 * `History`. Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_HISTORY_H
#define AGENTSCOPE_CCORE_HISTORY_H

#include "walk.h"

typedef struct {
    /* A message of a run with tool blocks: the chat walk's turn. */
    Turn tool_turn;
    /* The leading system message. */
    int (*system)(Walk *walk, const Head *head, Py_ssize_t index);
    /* A run of `n` agent messages (`indexes`: their places), behind `prompt`
     * (the history prompt for the first run, "" for the others). */
    int (*agents)(Walk *walk, const Head *heads, const Py_ssize_t *indexes, Py_ssize_t n,
                  PyObject *prompt);
} History;

/* One history line, `name: text`, after the lines before it (0; -1: no memory). */
static int history_line(Buffer *lines, const Head *head, Span text) {
    if (lines->len > 0 && buffer_put(lines, "\n", 1) < 0) return -1;
    if (buffer_put(lines, head->name.p, head->name.n) < 0 || buffer_put(lines, ": ", 2) < 0 ||
        buffer_put(lines, text.p, text.n) < 0)
        return -1;
    return 0;
}

/* Whether a message holds a tool call or result (`has_tool_blocks`); -1 for
 * blocks the walk cannot read. */
static int has_tool_blocks(const Head *head) {
    if (head->blocks.p == NULL) return 0;
    Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
    Span body;
    uint32_t kind;
    int rc, found = 0;
    while ((rc = next_block(&items, &kind, &body)) == 1) {
        if (kind == BLOCK_TOOL_USE || kind == BLOCK_TOOL_RESULT) found = 1;
    }
    return rc < 0 ? -1 : found;
}

/* The run of agent messages [start, end), then the walk goes on. */
static int history_run(const History *shape, Walk *walk, const Head *heads, Py_ssize_t start,
                       Py_ssize_t end, PyObject *prompt) {
    Py_ssize_t n = end - start;
    Py_ssize_t *indexes = PyMem_Malloc(sizeof(Py_ssize_t) * (n ? n : 1));
    if (indexes == NULL) {
        PyErr_NoMemory();
        return WALK_ERROR;
    }
    for (Py_ssize_t i = 0; i < n; i++) indexes[i] = start + i;
    int status = shape->agents(walk, heads + start, indexes, n, prompt);
    PyMem_Free(indexes);
    return status;
}

/* `name(msgs, msg_type, prompt) -> (messages, warnings) | None`. Every
 * message is serialized first: a run is formatted once it is whole. */
static PyObject *run_history(const char *name, const History *shape, PyObject *const *args,
                             Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_Format(PyExc_TypeError, "%s(msgs, msg_type, prompt)", name);
        return NULL;
    }
    PyObject *msgs = PySequence_Fast(args[0], "msgs must be a sequence");
    if (msgs == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(msgs);
    PyObject **items = PySequence_Fast_ITEMS(msgs);
    PyObject *serialize = PyObject_GetAttr(args[1], s_serialize);
    PyObject *wires = PyList_New(0);
    Head *heads = PyMem_Malloc(sizeof(Head) * (n ? n : 1));
    char *tools = PyMem_Malloc(n ? n : 1);
    Walk walk = {PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    int status = WALK_ERROR;
    if (serialize == NULL || wires == NULL || walk.out == NULL || walk.warnings == NULL)
        goto done;
    if (heads == NULL || tools == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        status = WALK_UNDECIDED;
        if (Py_TYPE(items[i]) != (PyTypeObject *)args[1]) goto done;
        PyObject *wire = PyObject_CallOneArg(serialize, items[i]);
        if (wire == NULL || append_new(wires, Py_NewRef(wire)) != WALK_OK) {
            Py_XDECREF(wire);
            status = WALK_ERROR;
            goto done;
        }
        Py_DECREF(wire); /* `wires` keeps it, and with it the heads' spans */
        if (!PyBytes_CheckExact(wire)) goto done;
        Span bytes = {(const uint8_t *)PyBytes_AS_STRING(wire), PyBytes_GET_SIZE(wire)};
        if (read_head(bytes, &heads[i]) != WALK_OK) goto done;
        int tooled = has_tool_blocks(&heads[i]);
        if (tooled < 0) goto done;
        tools[i] = (char)tooled;
    }
    Py_ssize_t at = 0;
    status = WALK_OK;
    if (n > 0 && heads[0].role != ROLE_USER && heads[0].role != ROLE_ASSISTANT) {
        status = shape->system(&walk, &heads[0], 0);
        at = 1;
    }
    PyObject *prompt = args[2];
    while (status == WALK_OK && at < n) {
        Py_ssize_t end = at;
        while (end < n && tools[end] == tools[at]) end++;
        if (tools[at]) {
            for (Py_ssize_t i = at; i < end && status == WALK_OK; i++)
                status = shape->tool_turn(&walk, &heads[i], i);
        } else {
            status = history_run(shape, &walk, heads, at, end, prompt);
            prompt = s_empty;
        }
        at = end;
    }
done:
    if (status == WALK_OK) result = PyTuple_Pack(2, walk.out, walk.warnings);
    else if (status == WALK_UNDECIDED) result = Py_NewRef(Py_None);
    Py_DECREF(msgs);
    Py_XDECREF(serialize);
    Py_XDECREF(wires);
    PyMem_Free(heads);
    PyMem_Free(tools);
    Py_XDECREF(walk.out);
    Py_XDECREF(walk.warnings);
    return result;
}

#endif
