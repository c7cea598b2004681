/* The compiled core of `format()` (issue 30): a chat walk from the messages'
 * wire bytes straight to the provider's message dicts, for the shapes and
 * blocks it knows. Python stays the reference: anything this file does not
 * know exactly (a block kind, a key beyond the common ones, a field seen
 * twice, JSON it would have to judge) makes the walk answer None, and the
 * caller formats the whole call in Python (never half and half).
 *
 * Field numbers come from message.proto; `field_numbers()` returns them so a
 * test checks them against the descriptors.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* -- field numbers (agentscope.message.v1) ------------------------------- */

enum {
    MSG_NAME = 2, MSG_ROLE = 3, MSG_TEXT = 4, MSG_BLOCKS = 5,
    BLOCKS_ITEMS = 1,
    BLOCK_TEXT = 1, BLOCK_THINKING = 2, BLOCK_TOOL_USE = 3, BLOCK_TOOL_RESULT = 4,
    TEXT_TEXT = 1,
    THINKING_THINKING = 1,
    TOOL_USE_ID = 1, TOOL_USE_NAME = 2, TOOL_USE_INPUT_JSON = 3,
    TOOL_USE_SUGGESTED_RULES = 7,
    TOOL_RESULT_ID = 1, TOOL_RESULT_NAME = 2, TOOL_RESULT_TEXT = 3,
    TOOL_RESULT_BLOCKS = 4, TOOL_RESULT_METADATA_JSON = 6,
    /* Every block's extra keys and key order: a block with either is not
     * the plain block this file writes. */
    ANY_EXTRA_JSON = 14, ANY_KEY_ORDER = 15,
    ROLE_USER = 1, ROLE_ASSISTANT = 2, ROLE_SYSTEM = 3, ROLE_TOOL = 4,
};

/* -- the wire -------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Reader;

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
} Span;

/* 0 on success; -1 on malformed input (the caller gives the call up). */
static int read_varint(Reader *r, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return -1;
        uint8_t byte = *r->p++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* The next field: its number, wire type and (length-delimited) bytes, or
 * (varint) value. Returns 1 for a field, 0 at the end, -1 on anything else
 * (fixed-width and group fields never occur where this file reads). */
static int next_field(Reader *r, uint32_t *number, Span *bytes, uint64_t *value) {
    if (r->p >= r->end) return 0;
    uint64_t tag;
    if (read_varint(r, &tag) < 0) return -1;
    *number = (uint32_t)(tag >> 3);
    switch (tag & 7) {
    case 0:
        return read_varint(r, value) < 0 ? -1 : 1;
    case 2: {
        uint64_t length;
        if (read_varint(r, &length) < 0 || length > (uint64_t)(r->end - r->p)) return -1;
        bytes->p = r->p;
        bytes->n = (Py_ssize_t)length;
        r->p += length;
        return 1;
    }
    default:
        return -1;
    }
}

/* -- output buffer --------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char small[256];
} Buffer;

static void buffer_init(Buffer *b) {
    b->data = b->small;
    b->len = 0;
    b->cap = sizeof(b->small);
}

static void buffer_free(Buffer *b) {
    if (b->data != b->small) PyMem_Free(b->data);
}

static int buffer_reserve(Buffer *b, Py_ssize_t more) {
    if (b->len + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap * 2;
    while (cap < b->len + more) cap *= 2;
    char *data = PyMem_Malloc(cap);
    if (data == NULL) return -1;
    memcpy(data, b->data, b->len);
    if (b->data != b->small) PyMem_Free(b->data);
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buffer_put(Buffer *b, const void *p, Py_ssize_t n) {
    if (buffer_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

/* -- tool-call arguments: `json.dumps(json.loads(text), ensure_ascii=False)` */

/* Results of the JSON rewriter: done, not a case it decides (Python's
 * json decides it: the call goes to the Python path), or out of memory. */
enum { JSON_OK = 0, JSON_UNDECIDED = 1, JSON_NOMEM = -1 };

/* Deeper input goes to Python, whose reader refuses past its own cap. */
#define JSON_MAX_DEPTH 100
/* Python's int() refuses more digits (sys.int_info.str_digits_check_threshold). */
#define JSON_MAX_INT_DIGITS 4300
/* Objects with more keys go to Python (the duplicate check is quadratic). */
#define JSON_MAX_KEYS 64

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    Buffer *out;
} Json;

static void json_space(Json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int hex4(const uint8_t *p, uint32_t *out) {
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        value <<= 4;
        if (c >= '0' && c <= '9') value |= c - '0';
        else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
        else return -1;
    }
    *out = value;
    return 0;
}

/* One code point as `json.encoder.encode_basestring` writes it. */
static int put_code_point(Buffer *b, uint32_t c) {
    char tmp[8];
    Py_ssize_t n;
    switch (c) {
    case '"': return buffer_put(b, "\\\"", 2);
    case '\\': return buffer_put(b, "\\\\", 2);
    case '\n': return buffer_put(b, "\\n", 2);
    case '\r': return buffer_put(b, "\\r", 2);
    case '\t': return buffer_put(b, "\\t", 2);
    case '\b': return buffer_put(b, "\\b", 2);
    case '\f': return buffer_put(b, "\\f", 2);
    default: break;
    }
    if (c < 0x20) {
        n = snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)c);
        return buffer_put(b, tmp, n);
    }
    if (c < 0x80) {
        tmp[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        tmp[0] = (char)(0xc0 | (c >> 6));
        tmp[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        tmp[0] = (char)(0xe0 | (c >> 12));
        tmp[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        tmp[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        tmp[0] = (char)(0xf0 | (c >> 18));
        tmp[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        tmp[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        tmp[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    return buffer_put(b, tmp, n);
}

/* A JSON string (at its opening quote) written again as Python writes it.
 * Raw bytes >= 0x80 are copied: the text is a protobuf string, valid UTF-8. */
static int json_string(Json *j) {
    Buffer *b = j->out;
    j->p++;
    if (buffer_put(b, "\"", 1) < 0) return JSON_NOMEM;
    for (;;) {
        const uint8_t *run = j->p;
        while (j->p < j->end && *j->p != '"' && *j->p != '\\' && *j->p >= 0x20) j->p++;
        if (buffer_put(b, run, j->p - run) < 0) return JSON_NOMEM;
        if (j->p >= j->end || *j->p < 0x20) return JSON_UNDECIDED; /* unterminated, raw control */
        if (*j->p == '"') {
            j->p++;
            return buffer_put(b, "\"", 1) < 0 ? JSON_NOMEM : JSON_OK;
        }
        /* An escape. */
        if (j->end - j->p < 2) return JSON_UNDECIDED;
        uint8_t e = j->p[1];
        uint32_t c;
        j->p += 2;
        switch (e) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u':
            if (j->end - j->p < 4 || hex4(j->p, &c) < 0) return JSON_UNDECIDED;
            j->p += 4;
            if (c >= 0xd800 && c <= 0xdbff) {
                uint32_t low;
                if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
                    hex4(j->p + 2, &low) < 0 || low < 0xdc00 || low > 0xdfff)
                    return JSON_UNDECIDED; /* a lone surrogate: Python keeps it */
                j->p += 6;
                c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
            } else if (c >= 0xdc00 && c <= 0xdfff) {
                return JSON_UNDECIDED;
            }
            break;
        default:
            return JSON_UNDECIDED;
        }
        if (put_code_point(b, c) < 0) return JSON_NOMEM;
    }
}

static int json_number(Json *j) {
    const uint8_t *start = j->p;
    int is_float = 0;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end) return JSON_UNDECIDED;
    if (*j->p == '0') {
        j->p++;
    } else if (*j->p >= '1' && *j->p <= '9') {
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    } else {
        return JSON_UNDECIDED; /* NaN, Infinity: Python's own reading */
    }
    if (j->p < j->end && *j->p == '.') {
        is_float = 1;
        j->p++;
        const uint8_t *digits = j->p;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
        if (j->p == digits) return JSON_UNDECIDED;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        is_float = 1;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        const uint8_t *digits = j->p;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
        if (j->p == digits) return JSON_UNDECIDED;
    }
    Py_ssize_t n = j->p - start;
    if (!is_float) {
        if (n > JSON_MAX_INT_DIGITS) return JSON_UNDECIDED;
        if (n == 2 && start[0] == '-' && start[1] == '0') /* int("-0") is 0 */
            return buffer_put(j->out, "0", 1) < 0 ? JSON_NOMEM : JSON_OK;
        return buffer_put(j->out, start, n) < 0 ? JSON_NOMEM : JSON_OK;
    }
    /* float(text), then float.__repr__. */
    char small[64];
    char *text = n < (Py_ssize_t)sizeof small ? small : PyMem_Malloc(n + 1);
    if (text == NULL) return JSON_NOMEM;
    memcpy(text, start, n);
    text[n] = '\0';
    double value = PyOS_string_to_double(text, NULL, NULL);
    if (text != small) PyMem_Free(text);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return JSON_UNDECIDED;
    }
    if (Py_IS_INFINITY(value) || Py_IS_NAN(value)) return JSON_UNDECIDED;
    char *repr = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (repr == NULL) return JSON_NOMEM;
    int rc = buffer_put(j->out, repr, (Py_ssize_t)strlen(repr)) < 0 ? JSON_NOMEM : JSON_OK;
    PyMem_Free(repr);
    return rc;
}

static int json_value(Json *j, int depth);

static int json_literal(Json *j, const char *word, Py_ssize_t n) {
    if (j->end - j->p < n || memcmp(j->p, word, n) != 0) return JSON_UNDECIDED;
    j->p += n;
    return buffer_put(j->out, word, n) < 0 ? JSON_NOMEM : JSON_OK;
}

static int json_object(Json *j, int depth) {
    /* Where each key was written (quotes included), to find a duplicate:
     * Python's dict keeps the first place and the last value. */
    Py_ssize_t starts[JSON_MAX_KEYS], ends[JSON_MAX_KEYS];
    int keys = 0, rc;
    j->p++;
    if (buffer_put(j->out, "{", 1) < 0) return JSON_NOMEM;
    json_space(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return buffer_put(j->out, "}", 1) < 0 ? JSON_NOMEM : JSON_OK;
    }
    for (;;) {
        if (j->p >= j->end || *j->p != '"' || keys == JSON_MAX_KEYS) return JSON_UNDECIDED;
        Py_ssize_t start = j->out->len;
        if ((rc = json_string(j)) != JSON_OK) return rc;
        Py_ssize_t end = j->out->len;
        for (int k = 0; k < keys; k++) {
            if (ends[k] - starts[k] == end - start &&
                memcmp(j->out->data + starts[k], j->out->data + start, end - start) == 0)
                return JSON_UNDECIDED;
        }
        starts[keys] = start;
        ends[keys] = end;
        keys++;
        json_space(j);
        if (j->p >= j->end || *j->p != ':') return JSON_UNDECIDED;
        j->p++;
        if (buffer_put(j->out, ": ", 2) < 0) return JSON_NOMEM;
        if ((rc = json_value(j, depth)) != JSON_OK) return rc;
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            if (buffer_put(j->out, ", ", 2) < 0) return JSON_NOMEM;
            json_space(j);
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return buffer_put(j->out, "}", 1) < 0 ? JSON_NOMEM : JSON_OK;
        }
        return JSON_UNDECIDED;
    }
}

static int json_array(Json *j, int depth) {
    int rc;
    j->p++;
    if (buffer_put(j->out, "[", 1) < 0) return JSON_NOMEM;
    json_space(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return buffer_put(j->out, "]", 1) < 0 ? JSON_NOMEM : JSON_OK;
    }
    for (;;) {
        if ((rc = json_value(j, depth)) != JSON_OK) return rc;
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            if (buffer_put(j->out, ", ", 2) < 0) return JSON_NOMEM;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return buffer_put(j->out, "]", 1) < 0 ? JSON_NOMEM : JSON_OK;
        }
        return JSON_UNDECIDED;
    }
}

static int json_value(Json *j, int depth) {
    int rc;
    json_space(j);
    if (j->p >= j->end) return JSON_UNDECIDED;
    switch (*j->p) {
    case '{':
        if (depth >= JSON_MAX_DEPTH) return JSON_UNDECIDED;
        rc = json_object(j, depth + 1);
        break;
    case '[':
        if (depth >= JSON_MAX_DEPTH) return JSON_UNDECIDED;
        rc = json_array(j, depth + 1);
        break;
    case '"': rc = json_string(j); break;
    case 't': rc = json_literal(j, "true", 4); break;
    case 'f': rc = json_literal(j, "false", 5); break;
    case 'n': rc = json_literal(j, "null", 4); break;
    default: rc = json_number(j); break;
    }
    if (rc == JSON_OK) json_space(j);
    return rc;
}

/* The arguments' text as `str`, NULL with an exception set, or Py_None
 * (borrowed, not an error) when Python must decide. */
static PyObject *arguments_text(Span input) {
    Buffer out;
    buffer_init(&out);
    Json j = {input.p, input.p + input.n, &out};
    int rc = json_value(&j, 0);
    if (rc == JSON_OK && j.p != j.end) rc = JSON_UNDECIDED;
    PyObject *result;
    if (rc == JSON_NOMEM) {
        result = PyErr_NoMemory();
    } else if (rc == JSON_UNDECIDED) {
        result = Py_None;
    } else {
        result = PyUnicode_DecodeUTF8(out.data, out.len, NULL);
    }
    buffer_free(&out);
    return result;
}

/* -- the chat walk ----------------------------------------------------------- */

/* Interned keys and constants, made at import. */
static PyObject *k_role, *k_name, *k_content, *k_type, *k_text, *k_id, *k_function,
    *k_arguments, *k_tool_calls, *k_tool_call_id, *s_user, *s_assistant, *s_system,
    *s_tool, *s_function, *s_text, *s_thinking, *s_empty, *s_skipped_thinking;

static PyObject *text_of(Span s) {
    return PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
}

/* Outcome of a walk step: done, hand the call to Python, or a Python error. */
enum { WALK_OK = 0, WALK_UNDECIDED = 1, WALK_ERROR = -1 };

/* A dict of the given keys and values, which it takes (each may be NULL: then
 * the dict is not made, and the rest are released). */
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

static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL) return WALK_ERROR;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc < 0 ? WALK_ERROR : WALK_OK;
}

/* `{"type": "text", "text": ...}` of a TextBlock holding its text alone. */
static int text_part(Span block, PyObject *parts) {
    Reader r = {block.p, block.p + block.n};
    Span text = {NULL, 0}, bytes;
    uint32_t number;
    uint64_t value;
    int seen = 0, rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number != TEXT_TEXT || seen) return WALK_UNDECIDED;
        text = bytes;
        seen = 1;
    }
    if (rc < 0 || !seen) return WALK_UNDECIDED; /* an empty text is Python's to judge */
    PyObject *keys[] = {k_type, k_text};
    PyObject *values[] = {Py_NewRef(s_text), text_of(text)};
    return append_new(parts, dict_of(2, keys, values));
}

/* A thinking block is skipped with AgentScope's warning, when plain. */
static int plain_thinking(Span block) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int thinking = 0, rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number == ANY_EXTRA_JSON || number == ANY_KEY_ORDER) return 0;
        if (number == THINKING_THINKING) thinking++;
    }
    return rc == 0 && thinking == 1;
}

typedef struct {
    Span id, name, input;
} ToolUse;

/* A Chat Completions `tool_calls` entry. */
static int tool_call(Span block, PyObject *calls) {
    Reader r = {block.p, block.p + block.n};
    ToolUse use = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        Span *slot = number == TOOL_USE_ID ? &use.id
                     : number == TOOL_USE_NAME ? &use.name
                     : number == TOOL_USE_INPUT_JSON ? &use.input
                     : NULL;
        if (slot != NULL) {
            if (slot->p != NULL) return WALK_UNDECIDED;
            *slot = bytes;
        } else if (number == TOOL_USE_SUGGESTED_RULES || number == ANY_EXTRA_JSON ||
                   number == ANY_KEY_ORDER) {
            return WALK_UNDECIDED;
        }
    }
    if (rc < 0 || use.id.p == NULL || use.name.p == NULL || use.input.p == NULL)
        return WALK_UNDECIDED;
    PyObject *arguments = arguments_text(use.input);
    if (arguments == NULL) return WALK_ERROR;
    if (arguments == Py_None) return WALK_UNDECIDED;
    PyObject *fkeys[] = {k_name, k_arguments};
    PyObject *fvalues[] = {text_of(use.name), arguments};
    PyObject *keys[] = {k_id, k_type, k_function};
    PyObject *values[] = {text_of(use.id), Py_NewRef(s_function), dict_of(2, fkeys, fvalues)};
    return append_new(calls, dict_of(3, keys, values));
}

/* `convert_tool_result_to_string` of an output of plain text blocks. */
static PyObject *result_text(Span blocks) {
    Reader r = {blocks.p, blocks.p + blocks.n};
    Span item, bytes;
    uint32_t number;
    uint64_t value;
    int rc, count = 0;
    Buffer out;
    buffer_init(&out);
    PyObject *result = Py_None;
    Span first = {NULL, 0};
    while ((rc = next_field(&r, &number, &item, &value)) == 1) {
        if (number != BLOCKS_ITEMS) goto done;
        Reader block = {item.p, item.p + item.n};
        if (next_field(&block, &number, &bytes, &value) != 1 || number != BLOCK_TEXT ||
            block.p != block.end)
            goto done; /* not a text block alone */
        Reader text = {bytes.p, bytes.p + bytes.n};
        Span words;
        if (next_field(&text, &number, &words, &value) != 1 || number != TEXT_TEXT ||
            text.p != text.end)
            goto done;
        if (count == 0) {
            first = words;
        } else {
            if (count == 1 && (buffer_put(&out, "- ", 2) < 0 ||
                               buffer_put(&out, first.p, first.n) < 0))
                goto nomem;
            if (buffer_put(&out, "\n- ", 3) < 0 || buffer_put(&out, words.p, words.n) < 0)
                goto nomem;
        }
        count++;
    }
    if (rc < 0) goto done;
    if (count == 0) result = Py_NewRef(s_empty);
    else if (count == 1) result = text_of(first);
    else result = PyUnicode_DecodeUTF8(out.data, out.len, NULL);
    goto done;
nomem:
    result = PyErr_NoMemory();
done:
    buffer_free(&out);
    return result;
}

/* The `role: tool` message of a tool result, appended to `out` at once. */
static int tool_message(Span block, PyObject *out) {
    Reader r = {block.p, block.p + block.n};
    Span id = {NULL, 0}, name = {NULL, 0}, text = {NULL, 0}, blocks = {NULL, 0}, bytes;
    uint32_t number;
    uint64_t value;
    int rc, outputs = 0;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        switch (number) {
        case TOOL_RESULT_ID:
            if (id.p != NULL) return WALK_UNDECIDED;
            id = bytes;
            break;
        case TOOL_RESULT_NAME:
            if (name.p != NULL) return WALK_UNDECIDED;
            name = bytes;
            break;
        case TOOL_RESULT_TEXT:
            text = bytes;
            outputs++;
            break;
        case TOOL_RESULT_BLOCKS:
            blocks = bytes;
            outputs++;
            break;
        case TOOL_RESULT_METADATA_JSON:
        case ANY_EXTRA_JSON:
        case ANY_KEY_ORDER:
            return WALK_UNDECIDED;
        default:
            break;
        }
    }
    if (rc < 0 || id.p == NULL || name.p == NULL || outputs > 1) return WALK_UNDECIDED;
    PyObject *content;
    if (text.p != NULL) content = text_of(text);
    else if (blocks.p != NULL) content = result_text(blocks);
    else content = Py_NewRef(s_empty); /* no output: AgentScope's "" */
    if (content == NULL) return WALK_ERROR;
    if (content == Py_None) return WALK_UNDECIDED;
    PyObject *keys[] = {k_role, k_tool_call_id, k_content, k_name};
    PyObject *values[] = {Py_NewRef(s_tool), text_of(id), content, text_of(name)};
    return append_new(out, dict_of(4, keys, values));
}

/* A warning as (path, block type, text). */
static int warn_skipped(PyObject *warnings, Py_ssize_t message, Py_ssize_t block) {
    PyObject *path = PyUnicode_FromFormat("messages[%zd].content[%zd]", message, block);
    if (path == NULL) return WALK_ERROR;
    PyObject *warning = PyTuple_Pack(3, path, s_thinking, s_skipped_thinking);
    Py_DECREF(path);
    return append_new(warnings, warning);
}

/* One message: its tool results go to `out` as they come, then the message
 * itself when it has parts or tool calls (`_finish_chat`). */
static int chat_turn(PyObject *wire, Py_ssize_t index, PyObject *out, PyObject *warnings) {
    const uint8_t *start = (const uint8_t *)PyBytes_AS_STRING(wire);
    Reader r = {start, start + PyBytes_GET_SIZE(wire)};
    Span name = {NULL, 0}, text = {NULL, 0}, blocks = {NULL, 0}, bytes;
    uint64_t role = 0, value;
    uint32_t number;
    int rc, contents = 0, roles = 0;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        switch (number) {
        case MSG_NAME:
            if (name.p != NULL) return WALK_UNDECIDED;
            name = bytes;
            break;
        case MSG_ROLE:
            role = value;
            roles++;
            break;
        case MSG_TEXT:
            text = bytes;
            contents++;
            break;
        case MSG_BLOCKS:
            blocks = bytes;
            contents++;
            break;
        default:
            break; /* id, metadata, times, usage...: not read by this walk */
        }
    }
    /* A message without a name, role, or with its content twice is Python's. */
    if (rc < 0 || name.p == NULL || roles > 1 || contents > 1) return WALK_UNDECIDED;
    PyObject *role_name = role == ROLE_USER        ? s_user
                          : role == ROLE_ASSISTANT ? s_assistant
                          : role == ROLE_SYSTEM || role == ROLE_TOOL ? s_system
                                                                      : NULL;
    if (role_name == NULL) return WALK_UNDECIDED;
    PyObject *parts = PyList_New(0), *calls = PyList_New(0);
    int status = WALK_ERROR;
    if (parts == NULL || calls == NULL) goto done;
    if (text.p != NULL) {
        PyObject *keys[] = {k_type, k_text};
        PyObject *values[] = {Py_NewRef(s_text), text_of(text)};
        if ((status = append_new(parts, dict_of(2, keys, values))) != WALK_OK) goto done;
    } else if (blocks.p != NULL) {
        Reader items = {blocks.p, blocks.p + blocks.n};
        Span item;
        Py_ssize_t at = 0;
        while ((rc = next_field(&items, &number, &item, &value)) == 1) {
            status = WALK_UNDECIDED;
            if (number != BLOCKS_ITEMS) goto done;
            Reader block = {item.p, item.p + item.n};
            if (next_field(&block, &number, &bytes, &value) != 1 || block.p != block.end)
                goto done; /* an empty block, or two kinds at once */
            switch (number) {
            case BLOCK_TEXT: status = text_part(bytes, parts); break;
            case BLOCK_TOOL_USE: status = tool_call(bytes, calls); break;
            case BLOCK_TOOL_RESULT: status = tool_message(bytes, out); break;
            case BLOCK_THINKING:
                status = plain_thinking(bytes) ? warn_skipped(warnings, index, at)
                                               : WALK_UNDECIDED;
                break;
            default: break; /* media, hints, provider blocks: Python's */
            }
            if (status != WALK_OK) goto done;
            at++;
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
        PyObject *values[] = {Py_NewRef(role_name), text_of(name),
                              nparts ? Py_NewRef(parts) : Py_NewRef(Py_None),
                              ncalls ? Py_NewRef(calls) : NULL};
        if (ncalls) {
            status = append_new(out, dict_of(4, keys, values));
        } else {
            status = append_new(out, dict_of(3, keys, values));
        }
    }
done:
    Py_XDECREF(parts);
    Py_XDECREF(calls);
    return status;
}

static PyObject *s_serialize;

/* chat_walk(msgs, msg_type) -> (messages, warnings) | None. Each message is
 * serialized as the walk reaches it: a call given back stops early. */
static PyObject *chat_walk(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "chat_walk(msgs, msg_type)");
        return NULL;
    }
    PyObject *msgs = PySequence_Fast(args[0], "chat_walk: msgs must be a sequence");
    if (msgs == NULL) return NULL;
    /* The type's method, looked up once (not on each message). */
    PyObject *serialize = PyObject_GetAttr(args[1], s_serialize);
    PyObject *out = PyList_New(0), *warnings = PyList_New(0), *result = NULL;
    if (serialize == NULL || out == NULL || warnings == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(msgs);
    PyObject **items = PySequence_Fast_ITEMS(msgs);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_TYPE(items[i]) != (PyTypeObject *)args[1]) {
            result = Py_NewRef(Py_None); /* a dict or a subclass: Python's */
            goto done;
        }
        PyObject *wire = PyObject_CallOneArg(serialize, items[i]);
        if (wire == NULL) goto done;
        int status = PyBytes_CheckExact(wire) ? chat_turn(wire, i, out, warnings) : WALK_UNDECIDED;
        Py_DECREF(wire);
        if (status == WALK_ERROR) goto done;
        if (status == WALK_UNDECIDED) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    result = PyTuple_Pack(2, out, warnings);
done:
    Py_DECREF(msgs);
    Py_XDECREF(serialize);
    Py_XDECREF(out);
    Py_XDECREF(warnings);
    return result;
}

/* The dumps this file does of tool-call arguments, for the tests: the text,
 * or None where Python decides. */
static PyObject *dumps_arguments(PyObject *module, PyObject *text) {
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(text, &n);
    if (p == NULL) return NULL;
    PyObject *result = arguments_text((Span){(const uint8_t *)p, n});
    return result == Py_None ? Py_NewRef(Py_None) : result;
}

static PyObject *field_numbers(PyObject *module, PyObject *unused) {
    return Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,"
        "s:i,s:i,s:i}",
        "Msg.name", MSG_NAME, "Msg.role", MSG_ROLE, "Msg.text", MSG_TEXT, "Msg.blocks",
        MSG_BLOCKS, "ContentBlocks.items", BLOCKS_ITEMS, "ContentBlock.text", BLOCK_TEXT,
        "ContentBlock.thinking", BLOCK_THINKING, "ContentBlock.tool_use", BLOCK_TOOL_USE,
        "ContentBlock.tool_result", BLOCK_TOOL_RESULT, "TextBlock.text", TEXT_TEXT,
        "TextBlock.extra_json", ANY_EXTRA_JSON, "TextBlock.key_order", ANY_KEY_ORDER,
        "ThinkingBlock.thinking", THINKING_THINKING, "ThinkingBlock.extra_json",
        ANY_EXTRA_JSON, "ToolUseBlock.id", TOOL_USE_ID, "ToolUseBlock.name", TOOL_USE_NAME,
        "ToolUseBlock.input_json", TOOL_USE_INPUT_JSON, "ToolUseBlock.suggested_rules",
        TOOL_USE_SUGGESTED_RULES, "ToolResultBlock.id", TOOL_RESULT_ID, "ToolResultBlock.name",
        TOOL_RESULT_NAME, "ToolResultBlock.text", TOOL_RESULT_TEXT, "ToolResultBlock.blocks",
        TOOL_RESULT_BLOCKS, "ToolResultBlock.metadata_json", TOOL_RESULT_METADATA_JSON,
        "ToolResultBlock.key_order", ANY_KEY_ORDER);
}

static PyObject *role_numbers(PyObject *module, PyObject *unused) {
    return Py_BuildValue("{s:i,s:i,s:i,s:i}", "ROLE_USER", ROLE_USER, "ROLE_ASSISTANT",
                         ROLE_ASSISTANT, "ROLE_SYSTEM", ROLE_SYSTEM, "ROLE_TOOL", ROLE_TOOL);
}

static PyMethodDef methods[] = {
    {"chat_walk", (PyCFunction)(void (*)(void))chat_walk, METH_FASTCALL,
     "chat_walk(msgs, msg_type) -> (messages, warnings) | None: OpenAI's chat walk of "
     "the messages (each exactly a msg_type), read from their serialized bytes; None: "
     "not one this core knows (format in Python)."},
    {"dumps_arguments", dumps_arguments, METH_O,
     "dumps_arguments(text) -> str | None: json.dumps(json.loads(text), "
     "ensure_ascii=False), or None where Python's json decides."},
    {"field_numbers", field_numbers, METH_NOARGS, "The field numbers this core reads."},
    {"role_numbers", role_numbers, METH_NOARGS, "The Role values this core reads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_ccore", "The compiled core of format() (see _core.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

static PyObject *intern(const char *text) {
    return PyUnicode_InternFromString(text);
}

PyMODINIT_FUNC PyInit__ccore(void) {
    if (!(k_role = intern("role")) || !(k_name = intern("name")) ||
        !(k_content = intern("content")) || !(k_type = intern("type")) ||
        !(k_text = intern("text")) || !(k_id = intern("id")) ||
        !(k_function = intern("function")) || !(k_arguments = intern("arguments")) ||
        !(k_tool_calls = intern("tool_calls")) || !(k_tool_call_id = intern("tool_call_id")) ||
        !(s_user = intern("user")) || !(s_assistant = intern("assistant")) ||
        !(s_system = intern("system")) || !(s_tool = intern("tool")) ||
        !(s_function = intern("function")) || !(s_text = intern("text")) ||
        !(s_thinking = intern("thinking")) || !(s_empty = intern("")) ||
        !(s_serialize = intern("SerializeToString")) ||
        !(s_skipped_thinking =
              intern("Unsupported block type thinking in the message, skipped.")))
        return NULL;
    return PyModule_Create(&module_def);
}
