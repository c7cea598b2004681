/* What a pydantic model's dump is a function of, as references: for a saved
 * session, which context messages are as the last save converted them, told
 * without dumping them again (pydantic's dump of every message, every save,
 * was the save's largest cost, and grows with the conversation).
 *
 * `refs(obj, models)` lists, depth first, every object the dump of `obj`
 * reads: each container's type (a marker), then its items (a dict's keys and
 * values in order; a model's `__dict__` then its `__pydantic_extra__`), then
 * END; each leaf itself. It answers `(shape, *objects)`, `shape` bytes with a
 * 1 for each marker. `same_refs(obj, refs, models)` walks `obj` the same way
 * and says whether it meets exactly those objects, by identity. The tuple
 * holds its leaves, so none can be freed and its address reused: the same
 * objects mean the same immutable values, the same types the same
 * serializers; a leaf met where the list has it is not even read (under
 * load a message's leaves are cold memory), which `shape` makes sound. A
 * leaf is an exact str, int, float, bool, bytes or None, or an instance of a
 * type `models` maps to False (an Enum's member); a type it maps to True is
 * a model walked through its fields; Python admits only models whose dump
 * is a function of their fields (no serializer or computed field of their
 * own). Anything else is not walked: `refs` answers its type (Python
 * decides and asks again), `same_refs` False (the message is dumped). END
 * (Ellipsis, never a leaf) closes each container, so no two walks list the
 * same references. */
#ifndef AGENTSCOPE_PROTO_REFS_H
#define AGENTSCOPE_PROTO_REFS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Deeper than this, the walk gives up (Python dumps): no JSON a message
 * holds nests so far, and a cycle ends here. */
#define REFS_DEPTH 64
#define REFS_END Py_Ellipsis

static PyObject *REFS_EXTRA; /* "__pydantic_extra__", interned at import */

/* One walk: listing into `out` (and `shape`), or comparing with `want`
 * (and `marks`: its shape) from `at`. */
typedef struct {
    PyObject *models;
    PyObject *out;       /* list, or NULL when comparing */
    char *shape;         /* listing: a byte per object, 1 for a marker */
    Py_ssize_t shape_size;
    PyObject *const *want;
    const char *marks;
    Py_ssize_t count, at;
    PyObject *unknown;   /* borrowed: the type not walked */
} RefsWalk;

enum { REFS_OK = 0, REFS_DIFFERENT = 1, REFS_CANNOT = 2, REFS_ERROR = -1 };

static int refs_meet(RefsWalk *w, PyObject *obj, char marker) {
    if (w->out == NULL) {
        if (w->at >= w->count || w->want[w->at] != obj) return REFS_DIFFERENT;
        w->at++;
        return REFS_OK;
    }
    Py_ssize_t n = PyList_GET_SIZE(w->out);
    if (n >= w->shape_size) {
        Py_ssize_t size = w->shape_size ? w->shape_size * 2 : 64;
        char *grown = PyMem_Realloc(w->shape, (size_t)size);
        if (grown == NULL) {
            PyErr_NoMemory();
            return REFS_ERROR;
        }
        w->shape = grown;
        w->shape_size = size;
    }
    w->shape[n] = marker;
    return PyList_Append(w->out, obj) < 0 ? REFS_ERROR : REFS_OK;
}

static int refs_walk(RefsWalk *w, PyObject *obj, int depth);

/* Comparing: whether `obj` is the leaf listed next (taken, then), told by
 * its address alone: neither read nor held (see the top; under load a
 * message's leaves are cold memory, and holding one writes to it). */
static int refs_skip(RefsWalk *w, PyObject *obj) {
    if (w->out != NULL || w->at >= w->count || w->marks[w->at] || w->want[w->at] != obj) return 0;
    w->at++;
    return 1;
}

static int refs_items(RefsWalk *w, PyObject *dict, int depth) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        int key_met = refs_skip(w, key);
        if (key_met && refs_skip(w, value)) continue;
        /* Held while walked: a model's attribute lookup may run Python. */
        Py_INCREF(key);
        Py_INCREF(value);
        int status = key_met ? REFS_OK : refs_walk(w, key, depth);
        if (status == REFS_OK) status = refs_walk(w, value, depth);
        Py_DECREF(key);
        Py_DECREF(value);
        if (status != REFS_OK) return status;
    }
    return REFS_OK;
}

static int refs_model(RefsWalk *w, PyObject *obj, int depth) {
    PyObject *fields = PyObject_GenericGetDict(obj, NULL);
    if (fields == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return REFS_ERROR;
        PyErr_Clear(); /* no __dict__: not a model the walk can read (None) */
        return REFS_CANNOT;
    }
    int status = PyDict_CheckExact(fields) ? refs_items(w, fields, depth) : REFS_CANNOT;
    Py_DECREF(fields);
    if (status != REFS_OK) return status;
    PyObject *extra = PyObject_GetAttr(obj, REFS_EXTRA);
    if (extra == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return REFS_ERROR;
        PyErr_Clear(); /* never set: no extra fields, as None */
        extra = Py_NewRef(Py_None);
    }
    status = refs_walk(w, extra, depth);
    Py_DECREF(extra);
    return status;
}

static int refs_walk(RefsWalk *w, PyObject *obj, int depth) {
    /* Comparing: the leaf listed here is this object, told without reading
     * it (see the top). */
    if (refs_skip(w, obj)) return REFS_OK;
    PyTypeObject *type = Py_TYPE(obj);
    if (type == &PyUnicode_Type || type == &PyLong_Type || type == &PyFloat_Type ||
        type == &PyBool_Type || type == &PyBytes_Type || obj == Py_None) {
        return refs_meet(w, obj, 0);
    }
    if (depth >= REFS_DEPTH) return REFS_CANNOT;
    int status;
    if (type == &PyList_Type || type == &PyTuple_Type) {
        if ((status = refs_meet(w, (PyObject *)type, 1)) != REFS_OK) return status;
        /* Its size read again at each item, each held while walked: a
         * model's attribute lookup may run Python. */
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(obj); i++) {
            if (refs_skip(w, PySequence_Fast_GET_ITEM(obj, i))) continue;
            PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(obj, i));
            status = refs_walk(w, item, depth + 1);
            Py_DECREF(item);
            if (status != REFS_OK) return status;
        }
    } else if (type == &PyDict_Type) {
        if ((status = refs_meet(w, (PyObject *)type, 1)) != REFS_OK) return status;
        if ((status = refs_items(w, obj, depth + 1)) != REFS_OK) return status;
    } else {
        PyObject *kind = PyDict_GetItemWithError(w->models, (PyObject *)type);
        if (kind == NULL) {
            if (PyErr_Occurred()) return REFS_ERROR;
            w->unknown = (PyObject *)type;
            return REFS_CANNOT;
        }
        if (kind != Py_True) return refs_meet(w, obj, 0); /* a leaf type */
        if ((status = refs_meet(w, (PyObject *)type, 1)) != REFS_OK) return status;
        if ((status = refs_model(w, obj, depth + 1)) != REFS_OK) return status;
    }
    return refs_meet(w, REFS_END, 1);
}

static int refs_models_arg(PyObject *models) {
    if (PyDict_Check(models)) return 0;
    PyErr_SetString(PyExc_TypeError, "models must be a dict of types");
    return -1;
}

/* refs(obj, models) -> (shape, *objects) | type | None */
static PyObject *refs(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "refs(obj, models) takes 2 arguments");
        return NULL;
    }
    if (refs_models_arg(args[1]) < 0) return NULL;
    RefsWalk w = {.models = args[1], .out = PyList_New(1)};
    if (w.out == NULL) return NULL;
    PyList_SET_ITEM(w.out, 0, Py_NewRef(Py_None)); /* the shape's place */
    w.shape = PyMem_Malloc(64);
    w.shape_size = w.shape == NULL ? 0 : 64;
    int status = w.shape == NULL ? (PyErr_NoMemory(), REFS_ERROR) : refs_walk(&w, args[0], 0);
    PyObject *result = NULL;
    if (status == REFS_OK) {
        Py_ssize_t n = PyList_GET_SIZE(w.out);
        PyObject *shape = PyBytes_FromStringAndSize(w.shape + 1, n - 1);
        if (shape != NULL) {
            PyList_SetItem(w.out, 0, shape); /* steals it */
            result = PyList_AsTuple(w.out);
        }
    } else if (status == REFS_CANNOT) {
        result = Py_NewRef(w.unknown != NULL ? w.unknown : Py_None);
    }
    PyMem_Free(w.shape);
    Py_DECREF(w.out);
    return result;
}

/* Whether `list` is what `refs` answers (shape first, a byte an object). */
static int refs_listed(PyObject *list) {
    return PyTuple_CheckExact(list) && PyTuple_GET_SIZE(list) >= 1 &&
           PyBytes_CheckExact(PyTuple_GET_ITEM(list, 0)) &&
           PyBytes_GET_SIZE(PyTuple_GET_ITEM(list, 0)) == PyTuple_GET_SIZE(list) - 1;
}

/* 1 if `obj`'s walk meets exactly the objects `list` holds, 0 if not, -1
 * on an error. */
static int refs_same(PyObject *obj, PyObject *list, PyObject *models) {
    RefsWalk w = {
        .models = models,
        .want = &PyTuple_GET_ITEM(list, 1),
        .marks = PyBytes_AS_STRING(PyTuple_GET_ITEM(list, 0)),
        .count = PyTuple_GET_SIZE(list) - 1,
    };
    int status = refs_walk(&w, obj, 0);
    if (status == REFS_ERROR) return -1;
    return status == REFS_OK && w.at == w.count;
}

/* same_refs(obj, refs, models) -> bool */
static PyObject *same_refs(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "same_refs(obj, refs, models) takes 3 arguments");
        return NULL;
    }
    if (!refs_listed(args[1])) {
        PyErr_SetString(PyExc_TypeError, "refs must be a tuple from refs()");
        return NULL;
    }
    if (refs_models_arg(args[2]) < 0) return NULL;
    int same = refs_same(args[0], args[1], args[2]);
    return same < 0 ? NULL : PyBool_FromLong(same);
}

/* Where `unchanged` finds a record's bytes and refs (`context._Seen`). */
#define SEEN_MSG 1
#define SEEN_REFS 2

/* One message of `unchanged`: the bytes the last save kept at its place,
 * if the message's dump reads what that one's read (else None, or NULL on
 * an error). */
static PyObject *refs_kept(PyObject *msg, PyObject *seen, PyObject *models) {
    if (!PyTuple_Check(seen) || PyTuple_GET_SIZE(seen) <= SEEN_REFS ||
        !refs_listed(PyTuple_GET_ITEM(seen, SEEN_REFS)))
        return Py_NewRef(Py_None); /* not walked */
    int same = refs_same(msg, PyTuple_GET_ITEM(seen, SEEN_REFS), models);
    return same < 0 ? NULL : Py_NewRef(same ? PyTuple_GET_ITEM(seen, SEEN_MSG) : Py_None);
}

/* unchanged(context, last, models) -> (out, kept): for each message of the
 * list `context`, the bytes the record at its place in the list `last` (a
 * tuple: its fingerprint, bytes, refs, ...) holds if `same_refs` holds,
 * else None; and the indexes of those kept. By place alone: a message is
 * never looked up by its id (the id, its hash and a table of them are cold
 * memory under load, about a tenth of the check), which suits a context
 * that grows at its end; Python looks up by id what moved. */
static PyObject *unchanged(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "unchanged(context, last, models) takes 3 arguments");
        return NULL;
    }
    PyObject *context = args[0], *last = args[1], *models = args[2];
    if (!PyList_CheckExact(context) || !PyList_CheckExact(last)) {
        PyErr_SetString(PyExc_TypeError, "unchanged takes two lists");
        return NULL;
    }
    if (refs_models_arg(models) < 0) return NULL;
    PyObject *out = PyList_New(0), *kept = PySet_New(NULL);
    if (out == NULL || kept == NULL) goto fail;
    /* Both lists' sizes read again at each message, each item held while
     * walked: a model's attribute lookup may run Python. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(context); i++) {
        PyObject *bytes;
        if (i < PyList_GET_SIZE(last)) {
            PyObject *msg = Py_NewRef(PyList_GET_ITEM(context, i));
            PyObject *seen = Py_NewRef(PyList_GET_ITEM(last, i));
            bytes = refs_kept(msg, seen, models);
            Py_DECREF(msg);
            Py_DECREF(seen);
            if (bytes == NULL) goto fail;
        } else {
            bytes = Py_NewRef(Py_None);
        }
        int added = PyList_Append(out, bytes);
        if (added == 0 && bytes != Py_None) {
            PyObject *index = PyLong_FromSsize_t(i);
            added = index == NULL ? -1 : PySet_Add(kept, index);
            Py_XDECREF(index);
        }
        Py_DECREF(bytes);
        if (added < 0) goto fail;
    }
    PyObject *result = PyTuple_Pack(2, out, kept);
    Py_DECREF(out);
    Py_DECREF(kept);
    return result;
fail:
    Py_XDECREF(out);
    Py_XDECREF(kept);
    return NULL;
}

static int init_refs_names(void) {
    REFS_EXTRA = PyUnicode_InternFromString("__pydantic_extra__");
    return REFS_EXTRA == NULL ? -1 : 0;
}

#endif
