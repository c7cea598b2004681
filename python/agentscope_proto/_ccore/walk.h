/* The walk over a call's messages that every provider's chat walk shares:
 * each message serialized as the walk reaches it (a call handed to Python
 * stops early), its head read, then the provider's turn (`Turn`). Part of
 * _ccore.c. */
#ifndef AGENTSCOPE_CCORE_WALK_H
#define AGENTSCOPE_CCORE_WALK_H

#include "blocks.h"

typedef struct {
    PyObject *out;      /* the provider's message list so far */
    PyObject *warnings; /* (path, block type, text) tuples */
} Walk;

/* One message of the walk: WALK_OK, WALK_UNDECIDED or WALK_ERROR. */
typedef int (*Turn)(Walk *walk, const Head *head, Py_ssize_t index);

/* A dict of the given keys and values, which it takes (a NULL value: the
 * dict is not made, and the other values are released). */
static PyObject *dict_of(int n, PyObject **keys, PyObject **values) {
    PyObject *dict = NULL;
    for (int i = 0; i < n; i++) {
        if (values[i] == NULL) goto done;
    }
    dict = PyDict_New();
    if (dict == NULL) goto done;
    for (int i = 0; i < n; i++) {
        if (PyDict_SetItem(dict, keys[i], values[i]) < 0) {
            Py_CLEAR(dict);
            goto done;
        }
    }
done:
    for (int i = 0; i < n; i++) Py_XDECREF(values[i]);
    return dict;
}

/* Append a new reference (NULL: an error already set). */
static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL) return WALK_ERROR;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc < 0 ? WALK_ERROR : WALK_OK;
}

/* A dropped block's warning at `messages[message].content[block]`. */
static int warn_at(Walk *walk, Py_ssize_t message, Py_ssize_t block, PyObject *kind,
                   PyObject *text) {
    PyObject *path = PyUnicode_FromFormat("messages[%zd].content[%zd]", message, block);
    if (path == NULL) return WALK_ERROR;
    PyObject *warning = PyTuple_Pack(3, path, kind, text);
    Py_DECREF(path);
    return append_new(walk->warnings, warning);
}

/* A block a chat walk drops with AgentScope's warning (`skipped_block`):
 * plain thinking or inline typed media (`passed_by`); any other is Python's. */
static int skip_block(Walk *walk, Py_ssize_t index, Py_ssize_t at, uint32_t kind, Span body) {
    PyObject *name = kind == BLOCK_THINKING ? s_thinking
                     : kind == BLOCK_IMAGE  ? s_image
                     : kind == BLOCK_AUDIO  ? s_audio
                     : kind == BLOCK_VIDEO  ? s_video
                                            : NULL;
    PyObject *text = kind == BLOCK_THINKING ? s_skipped_thinking
                     : kind == BLOCK_IMAGE  ? s_skipped_image
                     : kind == BLOCK_AUDIO  ? s_skipped_audio
                                            : s_skipped_video;
    if (name == NULL || !passed_by(kind, body, 1)) return WALK_UNDECIDED;
    return warn_at(walk, index, at, name, text);
}

/* `name(msgs, msg_type) -> (messages, warnings) | None`: the walk of `turn`
 * over the messages, each exactly a `msg_type`; None: Python formats it. */
static PyObject *run_walk(const char *name, Turn turn, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(msgs, msg_type)", name);
        return NULL;
    }
    PyObject *msgs = PySequence_Fast(args[0], "msgs must be a sequence");
    if (msgs == NULL) return NULL;
    /* The type's method, looked up once (not on each message). */
    PyObject *serialize = PyObject_GetAttr(args[1], s_serialize);
    Walk walk = {PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    if (serialize == NULL || walk.out == NULL || walk.warnings == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(msgs);
    PyObject **items = PySequence_Fast_ITEMS(msgs);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_TYPE(items[i]) != (PyTypeObject *)args[1]) {
            result = Py_NewRef(Py_None); /* a dict or a subclass: Python's */
            goto done;
        }
        PyObject *wire = PyObject_CallOneArg(serialize, items[i]);
        if (wire == NULL) goto done;
        Head head = {{NULL, 0}, 0, {NULL, 0}, {NULL, 0}};
        int status = WALK_UNDECIDED;
        if (PyBytes_CheckExact(wire)) {
            Span bytes = {(const uint8_t *)PyBytes_AS_STRING(wire), PyBytes_GET_SIZE(wire)};
            status = read_head(bytes, &head);
            if (status == WALK_OK) status = turn(&walk, &head, i);
        }
        Py_DECREF(wire);
        if (status == WALK_ERROR) goto done;
        if (status == WALK_UNDECIDED) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    result = PyTuple_Pack(2, walk.out, walk.warnings);
done:
    Py_DECREF(msgs);
    Py_XDECREF(serialize);
    Py_XDECREF(walk.out);
    Py_XDECREF(walk.warnings);
    return result;
}

#endif
