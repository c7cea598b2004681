/* The protobuf wire, read: fields of a message's bytes, and a growable
 * output buffer. Part of _ccore.c (one compilation unit). */
#ifndef AGENTSCOPE_CCORE_WIRE_H
#define AGENTSCOPE_CCORE_WIRE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "names.h"

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
    BLOCK_IMAGE = 5, BLOCK_AUDIO = 6, BLOCK_VIDEO = 7,
    MEDIA_SOURCE = 1, /* ImageBlock, AudioBlock, VideoBlock */
    SOURCE_URL = 1, SOURCE_DATA = 2, SOURCE_MEDIA_TYPE = 3, SOURCE_BASE64_TEXT = 4,
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
    *number = 0;
    *value = 0;
    bytes->p = NULL;
    bytes->n = 0;
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

#endif
