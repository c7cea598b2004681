/* JSON in the core: tool-call arguments written again as Python's
 * `json.dumps(json.loads(text), ensure_ascii=False)` does (`arguments_text`),
 * and JSON text read into Python values as `json.loads` reads it
 * (`json_value_of`). Anything either would have to judge differently from
 * Python (NaN, duplicate keys, lone surrogates, depth) is left to Python.
 * Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_JSON_H
#define AGENTSCOPE_CCORE_JSON_H

#include "wire.h"

/* -- tool-call arguments: `json.dumps(json.loads(text), ensure_ascii=False)` */

/* Results of the JSON rewriter: done, not a case it decides (Python's
 * json decides it: the call goes to the Python path), or out of memory. */
enum { JSON_OK = 0, JSON_UNDECIDED = 1, JSON_NOMEM = -1 };

/* Deeper input goes to Python, whose reader refuses past its own cap. */
#define JSON_MAX_DEPTH 100
/* Longer integers are Python's: int() refuses more digits than its limit,
 * which a program may lower to 640 (sys.int_info.str_digits_check_threshold). */
#define JSON_MAX_INT_DIGITS 640
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

/* One code point as UTF-8; with `escape`, as `json.encoder.encode_basestring`
 * (ensure_ascii=False) writes it. */
static int put_code_point(Buffer *b, uint32_t c, int escape) {
    char tmp[8];
    Py_ssize_t n;
    if (escape) {
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

/* A JSON string (at its opening quote) into `b`: written again as Python
 * writes it, quoted (`escape`), or decoded to its UTF-8 alone. Raw bytes
 * >= 0x80 are copied: the text is a protobuf string, valid UTF-8. */
static int json_string_into(Json *j, Buffer *b, int escape) {
    j->p++;
    if (escape && buffer_put(b, "\"", 1) < 0) return JSON_NOMEM;
    for (;;) {
        const uint8_t *run = j->p;
        while (j->p < j->end && *j->p != '"' && *j->p != '\\' && *j->p >= 0x20) j->p++;
        if (buffer_put(b, run, j->p - run) < 0) return JSON_NOMEM;
        if (j->p >= j->end || *j->p < 0x20) return JSON_UNDECIDED; /* unterminated, raw control */
        if (*j->p == '"') {
            j->p++;
            return escape && buffer_put(b, "\"", 1) < 0 ? JSON_NOMEM : JSON_OK;
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
        if (put_code_point(b, c, escape) < 0) return JSON_NOMEM;
    }
}

static int json_string(Json *j) {
    return json_string_into(j, j->out, 1);
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

/* -- JSON text to Python values --------------------------------------------- */

/* The value read, a new reference; NULL with an exception; or
 * Py_NotImplemented (borrowed) where Python must decide. */
#define JSON_PYTHON_DECIDES Py_NotImplemented

static PyObject *json_py_value(Json *j, int depth);

static PyObject *json_py_string(Json *j) {
    Buffer text;
    buffer_init(&text);
    int rc = json_string_into(j, &text, 0);
    PyObject *value = rc == JSON_NOMEM       ? PyErr_NoMemory()
                      : rc == JSON_UNDECIDED ? JSON_PYTHON_DECIDES
                                             : PyUnicode_DecodeUTF8(text.data, text.len, NULL);
    buffer_free(&text);
    return value;
}

/* A number as `json.loads` makes it: int for digits alone, else float. */
static PyObject *json_py_number(Json *j) {
    Buffer text;
    buffer_init(&text);
    Buffer *kept = j->out;
    j->out = &text;
    const uint8_t *start = j->p;
    int rc = json_number(j);
    j->out = kept;
    PyObject *value;
    if (rc != JSON_OK) {
        value = rc == JSON_NOMEM ? PyErr_NoMemory() : JSON_PYTHON_DECIDES;
    } else {
        int is_float = 0;
        for (const uint8_t *c = start; c < j->p; c++)
            if (*c == '.' || *c == 'e' || *c == 'E') is_float = 1;
        if (buffer_put(&text, "", 1) < 0) {
            value = PyErr_NoMemory();
        } else if (is_float) {
            /* json_number wrote float.__repr__ of the value: read it back. */
            value = PyFloat_FromDouble(PyOS_string_to_double(text.data, NULL, NULL));
        } else {
            value = PyLong_FromString(text.data, NULL, 10);
        }
    }
    buffer_free(&text);
    return value;
}

static PyObject *json_py_object(Json *j, int depth) {
    PyObject *dict = PyDict_New();
    if (dict == NULL) return NULL;
    j->p++;
    json_space(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return dict;
    }
    for (;;) {
        if (j->p >= j->end || *j->p != '"') break;
        PyObject *key = json_py_string(j);
        if (key == NULL || key == JSON_PYTHON_DECIDES) {
            Py_DECREF(dict);
            return key;
        }
        int seen = PyDict_Contains(dict, key); /* a duplicate: Python keeps the first place */
        json_space(j);
        if (seen != 0 || j->p >= j->end || *j->p != ':') {
            Py_DECREF(key);
            Py_DECREF(dict);
            return seen < 0 ? NULL : JSON_PYTHON_DECIDES;
        }
        j->p++;
        PyObject *value = json_py_value(j, depth);
        if (value == NULL || value == JSON_PYTHON_DECIDES) {
            Py_DECREF(key);
            Py_DECREF(dict);
            return value;
        }
        int rc = PyDict_SetItem(dict, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) {
            Py_DECREF(dict);
            return NULL;
        }
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            json_space(j);
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return dict;
        }
        break;
    }
    Py_DECREF(dict);
    return JSON_PYTHON_DECIDES;
}

static PyObject *json_py_array(Json *j, int depth) {
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    j->p++;
    json_space(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return list;
    }
    for (;;) {
        PyObject *value = json_py_value(j, depth);
        if (value == NULL || value == JSON_PYTHON_DECIDES) {
            Py_DECREF(list);
            return value;
        }
        int rc = PyList_Append(list, value);
        Py_DECREF(value);
        if (rc < 0) {
            Py_DECREF(list);
            return NULL;
        }
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return list;
        }
        Py_DECREF(list);
        return JSON_PYTHON_DECIDES;
    }
}

static PyObject *json_py_value(Json *j, int depth) {
    PyObject *value;
    json_space(j);
    if (j->p >= j->end) return JSON_PYTHON_DECIDES;
    switch (*j->p) {
    case '{':
        value = depth >= JSON_MAX_DEPTH ? JSON_PYTHON_DECIDES : json_py_object(j, depth + 1);
        break;
    case '[':
        value = depth >= JSON_MAX_DEPTH ? JSON_PYTHON_DECIDES : json_py_array(j, depth + 1);
        break;
    case '"': value = json_py_string(j); break;
    case 't':
        value = j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0
                    ? (j->p += 4, Py_NewRef(Py_True)) : JSON_PYTHON_DECIDES;
        break;
    case 'f':
        value = j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0
                    ? (j->p += 5, Py_NewRef(Py_False)) : JSON_PYTHON_DECIDES;
        break;
    case 'n':
        value = j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0
                    ? (j->p += 4, Py_NewRef(Py_None)) : JSON_PYTHON_DECIDES;
        break;
    default: value = json_py_number(j); break;
    }
    if (value != NULL && value != JSON_PYTHON_DECIDES) json_space(j);
    return value;
}

/* `json.loads(text)`: a new reference, NULL with an exception, or
 * JSON_PYTHON_DECIDES (borrowed). */
static PyObject *json_value_of(Span text) {
    Json j = {text.p, text.p + text.n, NULL};
    PyObject *value = json_py_value(&j, 0);
    if (value != NULL && value != JSON_PYTHON_DECIDES && j.p != j.end) {
        Py_DECREF(value);
        return JSON_PYTHON_DECIDES;
    }
    return value;
}

#endif
