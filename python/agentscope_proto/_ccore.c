/* The compiled core of `format()` (issue 30): a provider's chat walk from the
 * messages' wire bytes straight to its message dicts, for the shapes and
 * blocks it knows. Python stays the reference: anything the core does not know
 * exactly (a block kind, a key beyond the common ones, a field seen twice,
 * JSON it would have to judge) makes the walk answer None, and the caller
 * formats the whole call in Python (never half and half); `_core.py` says
 * which provider has which walk.
 *
 * One compilation unit: the parts under _ccore/ are included here, shared
 * first (the wire, JSON, a message's blocks, the walk), then one file per
 * provider shape. Field numbers come from message.proto; `field_numbers()`
 * returns them so a test checks them against the descriptors. Beside
 * format(): _ccore/refs.h, which of a saved session's messages changed.
 */
#include "_ccore/walk.h"
#include "_ccore/openai.h"
#include "_ccore/responses.h"
#include "_ccore/deepseek.h"
#include "_ccore/gemini.h"
#include "_ccore/ollama.h"
#include "_ccore/anthropic.h"
#include "_ccore/dashscope.h"
#include "_ccore/refs.h"

/* The dumps this file does of tool-call arguments, for the tests: the text,
 * or None where Python decides. */
static PyObject *dumps_arguments(PyObject *module, PyObject *text) {
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(text, &n);
    if (p == NULL) return NULL;
    PyObject *result = arguments_text((Span){(const uint8_t *)p, n});
    return result == Py_None ? Py_NewRef(Py_None) : result;
}

/* `json.loads` of JSON text (str or UTF-8 bytes), as `_json.loads` takes it:
 * a 1-tuple of the value, or None where Python's json decides (and says
 * why: NaN, a duplicate key, a lone surrogate, invalid UTF-8, depth...). */
static PyObject *loads(PyObject *module, PyObject *text) {
    Py_buffer view = {0};
    Span span;
    if (PyUnicode_Check(text)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(text, &n);
        if (p == NULL) { /* a lone surrogate in the str itself */
            PyErr_Clear();
            return Py_NewRef(Py_None);
        }
        span = (Span){(const uint8_t *)p, n};
    } else if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) == 0) {
        span = (Span){view.buf, view.len};
    } else {
        return NULL;
    }
    PyObject *value = json_value_of(span);
    PyBuffer_Release(&view);
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL; /* memory */
        PyErr_Clear(); /* invalid UTF-8 in a string: Python's error to word */
        return Py_NewRef(Py_None);
    }
    if (value == JSON_PYTHON_DECIDES) return Py_NewRef(Py_None);
    PyObject *result = PyTuple_Pack(1, value);
    Py_DECREF(value);
    return result;
}

/* Base64 as the core writes it, for the tests (every length, both paths:
 * `avx2=False` the portable one). */
static PyObject *b64encode(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    if (nargs != 2 || PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "b64encode(data, avx2)");
        return NULL;
    }
    int avx2 = PyObject_IsTrue(args[1]);
    PyObject *text = avx2 < 0 ? NULL : PyBytes_FromStringAndSize(NULL, (view.len + 2) / 3 * 4);
    if (text != NULL) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(text);
        const uint8_t *in = view.buf;
        Py_ssize_t done = 0;
#ifdef BASE64_AVX2
        if (avx2 && base64_has_avx2) done = base64_avx2(in, view.len, out);
#endif
        base64_scalar(in + done, view.len - done, out + done / 3 * 4);
    }
    PyBuffer_Release(&view);
    return text;
}

/* `results.copy_json`: dicts and lists copied, str, int, float, bool and None
 * shared (immutable); any other value (a dict or list subclass, anything
 * else) copied by `fallback`, the Python function, so the two agree. */
static PyObject *copy_value(PyObject *value, PyObject *fallback) {
    PyTypeObject *type = Py_TYPE(value);
    if (type == &PyUnicode_Type || type == &PyLong_Type || type == &PyFloat_Type ||
        type == &PyBool_Type || value == Py_None)
        return Py_NewRef(value);
    if (type != &PyDict_Type && type != &PyList_Type) return PyObject_CallOneArg(fallback, value);
    if (Py_EnterRecursiveCall(" in copy_json")) return NULL;
    PyObject *copy;
    if (type == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        copy = PyList_New(n);
        for (Py_ssize_t i = 0; copy != NULL && i < n; i++) {
            PyObject *item = copy_value(PyList_GET_ITEM(value, i), fallback);
            if (item == NULL) Py_CLEAR(copy);
            else PyList_SET_ITEM(copy, i, item);
        }
    } else {
        copy = PyDict_New();
        PyObject *key, *item;
        Py_ssize_t at = 0;
        while (copy != NULL && PyDict_Next(value, &at, &key, &item)) {
            PyObject *copied = copy_value(item, fallback);
            if (copied == NULL || PyDict_SetItem(copy, key, copied) < 0) Py_CLEAR(copy);
            Py_XDECREF(copied);
        }
    }
    Py_LeaveRecursiveCall();
    return copy;
}

static PyObject *copy_json(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "copy_json(value, fallback)");
        return NULL;
    }
    return copy_value(args[0], args[1]);
}

/* A text for `_delta`'s prefix test: an exact str, or (a tool call's
 * raw_input, `or ""`) "" for an absent or None one; NULL: Python's to judge. */
static PyObject *delta_text(PyObject *value, int tool) {
    if (value != NULL && PyUnicode_CheckExact(value)) return value;
    return tool && (value == NULL || value == Py_None) ? s_empty : NULL;
}

/* `parsing._delta` of one block that changed (`old` and `block` dicts of the
 * same `kind`): the grown part of a text, thinking or tool call, else the
 * block; NULL with an exception, Py_NotImplemented (borrowed) where Python
 * must decide (a value not a str, a key missing). */
static PyObject *grown_block(PyObject *old, PyObject *block, PyObject *kind) {
    int text = PyUnicode_CompareWithASCIIString(kind, "text") == 0 ||
               PyUnicode_CompareWithASCIIString(kind, "thinking") == 0;
    int tool = !text && PyUnicode_CompareWithASCIIString(kind, "tool_use") == 0;
    if (!text && !tool) return Py_NewRef(block);
    PyObject *key = text ? kind : s_raw_input;
    PyObject *now = PyDict_GetItemWithError(block, key);
    PyObject *then = now == NULL && PyErr_Occurred() ? NULL : PyDict_GetItemWithError(old, key);
    if (PyErr_Occurred()) return NULL;
    PyObject *now_text = delta_text(now, tool), *then_text = delta_text(then, tool);
    if (now_text == NULL || then_text == NULL) return Py_NotImplemented;
    Py_ssize_t n = PyUnicode_GET_LENGTH(then_text);
    Py_ssize_t grown = PyUnicode_Tailmatch(now_text, then_text, 0, PY_SSIZE_T_MAX, -1);
    if (grown < 0) return NULL;
    if (!grown) return Py_NewRef(block);
    PyObject *copy = PyDict_Copy(block);
    if (copy == NULL || now == NULL || now == Py_None) return copy; /* nothing to cut */
    PyObject *rest = PyUnicode_Substring(now_text, n, PyUnicode_GET_LENGTH(now_text));
    if (rest == NULL || PyDict_SetItem(copy, key, rest) < 0) Py_CLEAR(copy);
    Py_XDECREF(rest);
    return copy;
}

/* `parsing._delta(before, after)` with `make(index, block)` the delta's
 * constructor: a list, or None where Python must decide. */
static PyObject *deltas(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "deltas(before, after, make)");
        return NULL;
    }
    if (!PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) return Py_NewRef(Py_None);
    PyObject *before = args[0], *after = args[1], *make = args[2];
    PyObject *out = PyList_New(0);
    Py_ssize_t known = PyList_GET_SIZE(before);
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(after); i++) {
        PyObject *block = PyList_GET_ITEM(after, i);
        PyObject *old = i < known ? PyList_GET_ITEM(before, i) : NULL;
        if (!PyDict_CheckExact(block) || (old != NULL && !PyDict_CheckExact(old))) {
            Py_DECREF(out);
            return Py_NewRef(Py_None);
        }
        PyObject *delta = NULL;
        if (old != NULL) {
            int same = PyObject_RichCompareBool(old, block, Py_EQ);
            if (same < 0) goto fail;
            if (same) continue;
            PyObject *kind = PyDict_GetItemWithError(block, k_type);
            PyObject *was = PyDict_GetItemWithError(old, k_type);
            if (PyErr_Occurred()) goto fail;
            /* `old.get("type") != block.get("type")`: an absent type is None. */
            int same_kind = PyObject_RichCompareBool(was ? was : Py_None, kind ? kind : Py_None,
                                                     Py_EQ);
            if (same_kind < 0) goto fail;
            if (same_kind && (kind == NULL || !PyUnicode_Check(kind))) {
                /* No type (Python's KeyError), or one no delta is cut for. */
                if (kind == NULL) {
                    Py_DECREF(out);
                    return Py_NewRef(Py_None);
                }
            } else if (same_kind) {
                delta = grown_block(old, block, kind);
                if (delta == Py_NotImplemented) {
                    Py_DECREF(out);
                    return Py_NewRef(Py_None);
                }
                if (delta == NULL) goto fail;
            }
        }
        if (delta == NULL) delta = Py_NewRef(block);
        PyObject *index = PyLong_FromSsize_t(i);
        PyObject *made = index == NULL ? NULL : PyObject_CallFunctionObjArgs(make, index, delta, NULL);
        Py_XDECREF(index);
        Py_DECREF(delta);
        if (made == NULL || append_new(out, made) != WALK_OK) goto fail;
    }
    return out;
fail:
    Py_XDECREF(out);
    return NULL;
}

/* `shortuuid.uuid()` of 16 random bytes, as `message.helpers.new_id` makes
 * it: the bytes as a UUID4 (version and variant bits set), then 22 base-57
 * digits, most significant first. */
static PyObject *shortuuid(PyObject *module, PyObject *random) {
    static const char ALPHABET[] = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    if (!PyBytes_CheckExact(random) || PyBytes_GET_SIZE(random) != 16) {
        PyErr_SetString(PyExc_TypeError, "shortuuid: expected 16 bytes");
        return NULL;
    }
    uint8_t b[16];
    memcpy(b, PyBytes_AS_STRING(random), 16);
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);
    uint32_t limbs[4]; /* most significant first */
    for (int i = 0; i < 4; i++)
        limbs[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
                   (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    char digits[22];
    for (int d = 21; d >= 0; d--) { /* long division by 57, least significant digit first */
        uint64_t rest = 0;
        for (int i = 0; i < 4; i++) {
            uint64_t part = rest << 32 | limbs[i];
            limbs[i] = (uint32_t)(part / 57);
            rest = part % 57;
        }
        digits[d] = ALPHABET[rest];
    }
    return PyUnicode_FromStringAndSize(digits, 22);
}

static PyObject *field_numbers(PyObject *module, PyObject *unused) {
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,"
        "s:i,s:i,s:i,s:i}",
        "Msg.name", MSG_NAME, "Msg.role", MSG_ROLE, "Msg.text", MSG_TEXT, "Msg.blocks",
        MSG_BLOCKS, "ContentBlocks.items", BLOCKS_ITEMS, "ContentBlock.text", BLOCK_TEXT,
        "ContentBlock.thinking", BLOCK_THINKING, "ContentBlock.tool_use", BLOCK_TOOL_USE,
        "ContentBlock.tool_result", BLOCK_TOOL_RESULT, "TextBlock.text", TEXT_TEXT,
        "TextBlock.extra_json", ANY_EXTRA_JSON, "TextBlock.key_order", ANY_KEY_ORDER,
        "ThinkingBlock.thinking", THINKING_THINKING, "ThinkingBlock.extra_json",
        ANY_EXTRA_JSON, "ToolUseBlock.id", TOOL_USE_ID, "ToolUseBlock.name", TOOL_USE_NAME,
        "ToolUseBlock.input_json", TOOL_USE_INPUT_JSON, "ToolUseBlock.suggested_rules",
        TOOL_USE_SUGGESTED_RULES, "ToolUseBlock.thought_signature",
        GEMINI_TOOL_USE_THOUGHT_SIGNATURE, "ToolResultBlock.id", TOOL_RESULT_ID, "ToolResultBlock.name",
        TOOL_RESULT_NAME, "ToolResultBlock.text", TOOL_RESULT_TEXT, "ToolResultBlock.blocks",
        TOOL_RESULT_BLOCKS, "ToolResultBlock.metadata_json", TOOL_RESULT_METADATA_JSON,
        "ToolResultBlock.key_order", ANY_KEY_ORDER);
}

static PyObject *role_numbers(PyObject *module, PyObject *unused) {
    return Py_BuildValue("{s:i,s:i,s:i,s:i}", "ROLE_USER", ROLE_USER, "ROLE_ASSISTANT",
                         ROLE_ASSISTANT, "ROLE_SYSTEM", ROLE_SYSTEM, "ROLE_TOOL", ROLE_TOOL);
}

static PyMethodDef methods[] = {
    {"openai_chat", (PyCFunction)(void (*)(void))openai_chat, METH_FASTCALL,
     "openai_chat(msgs, msg_type) -> (messages, warnings) | None: OpenAI Chat Completions' "
     "chat walk of the messages (each exactly a msg_type) from their serialized bytes; "
     "None: not one the core knows (format in Python)."},
    {"openai_multi_agent", (PyCFunction)(void (*)(void))openai_multi_agent, METH_FASTCALL,
     "openai_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "OpenAI's multi-agent walk (history runs behind `prompt`)."},
    {"responses_chat", (PyCFunction)(void (*)(void))responses_chat, METH_FASTCALL,
     "responses_chat(msgs, msg_type) -> (messages, warnings) | None: OpenAI Responses' "
     "chat walk of the messages (each exactly a msg_type); None: format in Python."},
    {"responses_multi_agent", (PyCFunction)(void (*)(void))responses_multi_agent,
     METH_FASTCALL,
     "responses_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "OpenAI Responses' multi-agent walk (history runs behind `prompt`)."},
    {"deepseek_chat", (PyCFunction)(void (*)(void))deepseek_chat, METH_FASTCALL,
     "deepseek_chat(msgs, msg_type) -> (messages, warnings) | None: DeepSeek's chat walk "
     "(one string of content per message, reasoning_content)."},
    {"deepseek_multi_agent", (PyCFunction)(void (*)(void))deepseek_multi_agent, METH_FASTCALL,
     "deepseek_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "DeepSeek's multi-agent walk (history runs as one string behind `prompt`)."},
    {"gemini_chat", (PyCFunction)(void (*)(void))gemini_chat, METH_FASTCALL,
     "gemini_chat(msgs, msg_type) -> (messages, warnings) | None: Gemini generateContent's "
     "chat walk (AgentScope's fidelity); None: format in Python."},
    {"gemini_multi_agent", (PyCFunction)(void (*)(void))gemini_multi_agent, METH_FASTCALL,
     "gemini_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "Gemini's multi-agent walk (history runs behind `prompt`)."},
    {"ollama_chat", (PyCFunction)(void (*)(void))ollama_chat, METH_FASTCALL,
     "ollama_chat(msgs, msg_type) -> (messages, warnings) | None: Ollama /api/chat's chat "
     "walk (AgentScope's OllamaChatFormatter); None: format in Python."},
    {"ollama_multi_agent", (PyCFunction)(void (*)(void))ollama_multi_agent, METH_FASTCALL,
     "ollama_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "Ollama's multi-agent walk (history runs behind `prompt`)."},
    {"anthropic_chat", (PyCFunction)(void (*)(void))anthropic_chat, METH_FASTCALL,
     "anthropic_chat(msgs, msg_type) -> (messages, warnings) | None: Anthropic Messages' "
     "chat walk of the messages (each exactly a msg_type) from their serialized bytes; "
     "None: not one the core knows (format in Python)."},
    {"anthropic_multi_agent", (PyCFunction)(void (*)(void))anthropic_multi_agent, METH_FASTCALL,
     "anthropic_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "Anthropic's multi-agent walk (history runs behind `prompt`)."},
    {"dashscope_chat", (PyCFunction)(void (*)(void))dashscope_chat, METH_FASTCALL,
     "dashscope_chat(msgs, msg_type) -> (messages, warnings) | None: DashScope's chat walk "
     "(MultiModalConversation messages); None: format in Python."},
    {"dashscope_multi_agent", (PyCFunction)(void (*)(void))dashscope_multi_agent, METH_FASTCALL,
     "dashscope_multi_agent(msgs, msg_type, prompt) -> (messages, warnings) | None: "
     "DashScope's multi-agent walk (history runs behind `prompt`)."},
    {"dumps_arguments", dumps_arguments, METH_O,
     "dumps_arguments(text) -> str | None: json.dumps(json.loads(text), "
     "ensure_ascii=False), or None where Python's json decides."},
    {"loads", loads, METH_O,
     "loads(text) -> (value,) | None: json.loads(text) of str or UTF-8 bytes, or None "
     "where Python's json decides."},
    {"b64encode", (PyCFunction)(void (*)(void))b64encode, METH_FASTCALL,
     "b64encode(data, avx2) -> bytes: base64 as the core writes it (avx2: where the CPU has "
     "it)."},
    {"copy_json", (PyCFunction)(void (*)(void))copy_json, METH_FASTCALL,
     "copy_json(value, fallback) -> a copy of JSON-shaped data (dicts and lists new, leaves "
     "shared; any other value copied by fallback)."},
    {"deltas", (PyCFunction)(void (*)(void))deltas, METH_FASTCALL,
     "deltas(before, after, make) -> list | None: what changed between two stream "
     "snapshots (parsing._delta), None where Python decides."},
    {"shortuuid", shortuuid, METH_O,
     "shortuuid(random16) -> str: a message id in AgentScope's form (shortuuid's UUID4 in "
     "base 57) from 16 random bytes."},
    {"refs", (PyCFunction)(void (*)(void))refs, METH_FASTCALL,
     "refs(obj, models) -> tuple | type | None: the objects a pydantic model's dump reads "
     "(_ccore/refs.h); a type it cannot walk, or None (too deep)."},
    {"same_refs", (PyCFunction)(void (*)(void))same_refs, METH_FASTCALL,
     "same_refs(obj, refs, models) -> bool: whether obj's dump reads exactly those objects."},
    {"unchanged", (PyCFunction)(void (*)(void))unchanged, METH_FASTCALL,
     "unchanged(context, last, models) -> (out, kept): the bytes the last save's record at "
     "each message's place holds if its dump reads what that one's read (else None), and "
     "their indexes."},
    {"field_numbers", field_numbers, METH_NOARGS, "The field numbers the core reads."},
    {"role_numbers", role_numbers, METH_NOARGS, "The Role values the core reads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_ccore", "The compiled core of format() (see _core.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

/* Each part's interned names, made once at import. */
static int (*const NAME_INITS[])(void) = {
    init_shared_names,
    init_openai_names,
    init_responses_names,
    init_deepseek_names,
    init_gemini_names,
    init_ollama_names,
    init_anthropic_names,
    init_dashscope_names,
    init_refs_names,
};

PyMODINIT_FUNC PyInit__ccore(void) {
    init_base64();
    for (size_t i = 0; i < sizeof NAME_INITS / sizeof NAME_INITS[0]; i++) {
        if (NAME_INITS[i]() < 0) return NULL;
    }
    return PyModule_Create(&module_def);
}
