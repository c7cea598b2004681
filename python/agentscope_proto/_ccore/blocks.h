/* The parts of a `Msg` every provider's walk reads, from its wire bytes:
 * the message's head (name, role, content), its blocks one by one, and the
 * plain forms of the blocks the core knows (a block with anything beyond
 * them is left to Python: `WALK_UNDECIDED`). Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_BLOCKS_H
#define AGENTSCOPE_CCORE_BLOCKS_H

#include "json.h"

/* Outcome of a walk step: done, hand the call to Python, or a Python error. */
enum { WALK_OK = 0, WALK_UNDECIDED = 1, WALK_ERROR = -1 };

typedef struct {
    Span name;     /* p NULL: no name (Python refuses the message) */
    uint64_t role; /* a Role value, 0 when unset */
    Span text;     /* the content as one string (p NULL: not that) */
    Span blocks;   /* the content as ContentBlocks (p NULL: not that) */
} Head;

/* The head of a message; WALK_UNDECIDED for one Python must judge (no name,
 * no role, a field twice). Other fields (id, metadata, times, usage...) are
 * not read by any walk in AgentScope's fidelity. */
static int read_head(Span wire, Head *head) {
    Reader r = {wire.p, wire.p + wire.n};
    Span bytes;
    uint64_t value;
    uint32_t number;
    int rc, contents = 0, roles = 0;
    memset(head, 0, sizeof *head);
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        switch (number) {
        case MSG_NAME:
            if (head->name.p != NULL) return WALK_UNDECIDED;
            head->name = bytes;
            break;
        case MSG_ROLE:
            head->role = value;
            roles++;
            break;
        case MSG_TEXT:
            head->text = bytes;
            contents++;
            break;
        case MSG_BLOCKS:
            head->blocks = bytes;
            contents++;
            break;
        default:
            break;
        }
    }
    if (rc < 0 || head->name.p == NULL || roles != 1 || contents > 1) return WALK_UNDECIDED;
    if (head->role < ROLE_USER || head->role > ROLE_TOOL) return WALK_UNDECIDED;
    return WALK_OK;
}

/* The next block of a ContentBlocks' bytes: 1 with its kind (the oneof's
 * field number) and its bytes, 0 at the end, -1 for anything else (an empty
 * block, two kinds at once, malformed bytes). */
static int next_block(Reader *items, uint32_t *kind, Span *body) {
    Span item;
    uint32_t number;
    uint64_t value;
    int rc = next_field(items, &number, &item, &value);
    if (rc <= 0) return rc;
    if (number != BLOCKS_ITEMS) return -1;
    Reader block = {item.p, item.p + item.n};
    if (next_field(&block, kind, body, &value) != 1 || block.p != block.end) return -1;
    return 1;
}

/* A TextBlock holding its text alone (an empty text is Python's to judge). */
static int read_text(Span block, Span *text) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int seen = 0, rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number != TEXT_TEXT || seen) return WALK_UNDECIDED;
        *text = bytes;
        seen = 1;
    }
    return rc == 0 && seen ? WALK_OK : WALK_UNDECIDED;
}

/* A ThinkingBlock's thinking, when the block has no extra keys or key order
 * (its signatures and ids are read by no walk in AgentScope's fidelity). */
static int read_thinking(Span block, Span *thinking) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int seen = 0, rc;
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number == ANY_EXTRA_JSON || number == ANY_KEY_ORDER) return WALK_UNDECIDED;
        if (number == THINKING_THINKING) {
            *thinking = bytes;
            seen++;
        }
    }
    return rc == 0 && seen == 1 ? WALK_OK : WALK_UNDECIDED;
}

typedef struct {
    Span id, name, input;
} ToolUse;

/* A ToolUseBlock's id, name and input JSON (all three set). */
static int read_tool_use(Span block, ToolUse *use) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int rc;
    memset(use, 0, sizeof *use);
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        Span *slot = number == TOOL_USE_ID           ? &use->id
                     : number == TOOL_USE_NAME       ? &use->name
                     : number == TOOL_USE_INPUT_JSON ? &use->input
                                                     : NULL;
        if (slot != NULL) {
            if (slot->p != NULL) return WALK_UNDECIDED;
            *slot = bytes;
        } else if (number == TOOL_USE_SUGGESTED_RULES || number == ANY_EXTRA_JSON ||
                   number == ANY_KEY_ORDER) {
            return WALK_UNDECIDED;
        }
    }
    if (rc < 0 || use->id.p == NULL || use->name.p == NULL || use->input.p == NULL)
        return WALK_UNDECIDED;
    return WALK_OK;
}

typedef struct {
    Span id, name;
    Span text;   /* the output as one string (p NULL: not that) */
    Span blocks; /* the output as blocks (p NULL: not that); neither: no output */
} ToolResult;

/* A ToolResultBlock's id, name and output (metadata, extra keys: Python's). */
static int read_tool_result(Span block, ToolResult *result) {
    Reader r = {block.p, block.p + block.n};
    Span bytes;
    uint32_t number;
    uint64_t value;
    int rc, outputs = 0;
    memset(result, 0, sizeof *result);
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        switch (number) {
        case TOOL_RESULT_ID:
            if (result->id.p != NULL) return WALK_UNDECIDED;
            result->id = bytes;
            break;
        case TOOL_RESULT_NAME:
            if (result->name.p != NULL) return WALK_UNDECIDED;
            result->name = bytes;
            break;
        case TOOL_RESULT_TEXT:
            result->text = bytes;
            outputs++;
            break;
        case TOOL_RESULT_BLOCKS:
            result->blocks = bytes;
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
    if (rc < 0 || result->id.p == NULL || result->name.p == NULL || outputs > 1)
        return WALK_UNDECIDED;
    return WALK_OK;
}

static PyObject *text_of(Span s) {
    return PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
}

/* AgentScope's `convert_tool_result_to_string` of a result's output made of
 * plain text blocks (or a string, or none): a new reference, NULL with an
 * exception, or Py_None (borrowed) where Python must decide (media...). */
static PyObject *result_text(const ToolResult *result) {
    if (result->text.p != NULL) return text_of(result->text);
    if (result->blocks.p == NULL) return Py_NewRef(s_empty); /* no output: "" */
    Reader items = {result->blocks.p, result->blocks.p + result->blocks.n};
    Span body, first = {NULL, 0}, words = {NULL, 0};
    uint32_t kind;
    int rc, count = 0;
    Buffer out;
    buffer_init(&out);
    PyObject *text = Py_None;
    while ((rc = next_block(&items, &kind, &body)) == 1) {
        if (kind != BLOCK_TEXT || read_text(body, &words) != WALK_OK) goto done;
        if (count == 0) {
            first = words;
        } else {
            if (count == 1 &&
                (buffer_put(&out, "- ", 2) < 0 || buffer_put(&out, first.p, first.n) < 0))
                goto nomem;
            if (buffer_put(&out, "\n- ", 3) < 0 || buffer_put(&out, words.p, words.n) < 0)
                goto nomem;
        }
        count++;
    }
    if (rc < 0) goto done;
    if (count == 0) text = Py_NewRef(s_empty);
    else if (count == 1) text = text_of(first);
    else text = PyUnicode_DecodeUTF8(out.data, out.len, NULL);
    goto done;
nomem:
    text = PyErr_NoMemory();
done:
    buffer_free(&out);
    return text;
}

/* -- media ------------------------------------------------------------------ */

typedef struct {
    Span url;        /* p NULL: not a URL */
    Span data;       /* the bytes (p NULL: not inline bytes) */
    Span b64;        /* base64 text kept as given (p NULL: not that) */
    Span media_type; /* p NULL: none given */
} Media;

/* A media block's source (image, audio, video). Block ids, names and times
 * are read by no walk in AgentScope's fidelity; extra keys are Python's. */
static int read_media(Span block, Media *media) {
    Reader r = {block.p, block.p + block.n};
    Span source = {NULL, 0}, bytes;
    uint32_t number;
    uint64_t value;
    int rc;
    memset(media, 0, sizeof *media);
    while ((rc = next_field(&r, &number, &bytes, &value)) == 1) {
        if (number == MEDIA_SOURCE) {
            if (source.p != NULL) return WALK_UNDECIDED;
            source = bytes;
        } else if (number == ANY_EXTRA_JSON || number == ANY_KEY_ORDER) {
            return WALK_UNDECIDED;
        }
    }
    if (rc < 0 || source.p == NULL) return WALK_UNDECIDED;
    Reader s = {source.p, source.p + source.n};
    int kinds = 0;
    while ((rc = next_field(&s, &number, &bytes, &value)) == 1) {
        switch (number) {
        case SOURCE_URL: media->url = bytes; kinds++; break;
        case SOURCE_DATA: media->data = bytes; kinds++; break;
        case SOURCE_BASE64_TEXT: media->b64 = bytes; kinds++; break;
        case SOURCE_MEDIA_TYPE:
            if (media->media_type.p != NULL) return WALK_UNDECIDED;
            media->media_type = bytes;
            break;
        default: return WALK_UNDECIDED;
        }
    }
    return rc == 0 && kinds == 1 ? WALK_OK : WALK_UNDECIDED;
}

/* Inline media with its media type: what every walk here formats (a URL
 * may need the caller's permission to read or download, and inline bytes
 * without a type are sniffed: both Python's). */
static int inline_media(const Media *media) {
    return media->url.p == NULL && media->media_type.p != NULL && media->media_type.n > 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of n bytes into out (4 * ceil(n / 3) characters), with padding. */
static void base64_scalar(const uint8_t *in, Py_ssize_t n, uint8_t *out) {
    Py_ssize_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[0] = B64[v >> 18];
        out[1] = B64[(v >> 12) & 63];
        out[2] = B64[(v >> 6) & 63];
        out[3] = B64[v & 63];
        out += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[0] = B64[v >> 18];
        out[1] = B64[(v >> 12) & 63];
        out[2] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        out[3] = '=';
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BASE64_AVX2 1

/* 24 bytes (loaded from 4 before them: each 128-bit lane holds 12) to their
 * 32 sextets, one a byte: W. Muła's and A. Klomp's AVX2 reshuffle. */
__attribute__((target("avx2"))) static inline __m256i base64_reshuffle(__m256i input) {
    const __m256i in = _mm256_shuffle_epi8(
        input, _mm256_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1, 14, 15, 13, 14,
                               11, 12, 10, 11, 8, 9, 7, 8, 5, 6, 4, 5));
    const __m256i t0 = _mm256_and_si256(in, _mm256_set1_epi32(0x0FC0FC00));
    const __m256i t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x04000040));
    const __m256i t2 = _mm256_and_si256(in, _mm256_set1_epi32(0x003F03F0));
    const __m256i t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x01000010));
    return _mm256_or_si256(t1, t3);
}

/* Sextets to the alphabet: an offset per range, looked up by a shuffle. */
__attribute__((target("avx2"))) static inline __m256i base64_translate(__m256i in) {
    const __m256i lut = _mm256_setr_epi8(65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16,
                                         0, 0, 65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4,
                                         -19, -16, 0, 0);
    __m256i indices = _mm256_subs_epu8(in, _mm256_set1_epi8(51));
    const __m256i mask = _mm256_cmpgt_epi8(in, _mm256_set1_epi8(25));
    indices = _mm256_sub_epi8(indices, mask);
    return _mm256_add_epi8(in, _mm256_shuffle_epi8(lut, indices));
}

/* The whole 24-byte groups of `in` that AVX2 can load (each load reads 4
 * bytes before and after its group): the bytes it encoded. */
__attribute__((target("avx2"))) static Py_ssize_t base64_avx2(const uint8_t *in, Py_ssize_t n,
                                                              uint8_t *out) {
    if (n < 32) return 0;
    Py_ssize_t rounds = (n - 4) / 24;
    /* The first group is loaded from its start and shifted into place. */
    __m256i src = _mm256_loadu_si256((const __m256i *)in);
    src = _mm256_permutevar8x32_epi32(src, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
    _mm256_storeu_si256((__m256i *)out, base64_translate(base64_reshuffle(src)));
    for (Py_ssize_t r = 1; r < rounds; r++) {
        src = _mm256_loadu_si256((const __m256i *)(in + r * 24 - 4));
        _mm256_storeu_si256((__m256i *)(out + r * 32), base64_translate(base64_reshuffle(src)));
    }
    return rounds * 24;
}

static int base64_has_avx2;
#endif

/* Base64 of n bytes into out: AVX2 where the CPU has it, then the rest. */
static void base64_encode(const uint8_t *in, Py_ssize_t n, uint8_t *out) {
    Py_ssize_t done = 0;
#ifdef BASE64_AVX2
    if (base64_has_avx2) done = base64_avx2(in, n, out);
#endif
    base64_scalar(in + done, n - done, out + done / 3 * 4);
}

static void init_base64(void) {
#ifdef BASE64_AVX2
    __builtin_cpu_init();
    base64_has_avx2 = __builtin_cpu_supports("avx2");
#endif
}

/* `prefix` + the media's base64 text (its bytes encoded, or its kept text)
 * + `suffix`, as one str; NULL with an exception; Py_None (borrowed) where a
 * part is not ASCII (Python's to judge). */
static PyObject *base64_text(Span prefix, const Media *media, Span suffix) {
    Py_ssize_t encoded = media->b64.p != NULL ? media->b64.n : (media->data.n + 2) / 3 * 4;
    PyObject *text = PyUnicode_New(prefix.n + encoded + suffix.n, 127);
    if (text == NULL) return NULL;
    uint8_t *out = PyUnicode_1BYTE_DATA(text);
    for (Py_ssize_t i = 0; i < prefix.n; i++) {
        if (prefix.p[i] >= 0x80) { /* a media type is ASCII, else Python's */
            Py_DECREF(text);
            return Py_None;
        }
    }
    memcpy(out, prefix.p, prefix.n);
    out += prefix.n;
    if (media->b64.p != NULL) {
        for (Py_ssize_t i = 0; i < media->b64.n; i++) {
            if (media->b64.p[i] >= 0x80) {
                Py_DECREF(text);
                return Py_None;
            }
        }
        memcpy(out, media->b64.p, media->b64.n);
        out += media->b64.n;
    } else {
        base64_encode(media->data.p, media->data.n, out);
        out += encoded;
    }
    for (Py_ssize_t i = 0; i < suffix.n; i++) {
        if (suffix.p[i] >= 0x80) {
            Py_DECREF(text);
            return Py_None;
        }
    }
    memcpy(out, suffix.p, suffix.n);
    return text;
}

/* `data:<type>;base64,<data>`, the data URL of inline media; NULL with an
 * exception, Py_None (borrowed) where a part is not ASCII. */
static PyObject *data_url(const Media *media) {
    Buffer prefix;
    buffer_init(&prefix);
    PyObject *url = NULL;
    if (buffer_put(&prefix, "data:", 5) == 0 &&
        buffer_put(&prefix, media->media_type.p, media->media_type.n) == 0 &&
        buffer_put(&prefix, ";base64,", 8) == 0)
        url = base64_text((Span){(const uint8_t *)prefix.data, prefix.len}, media,
                          (Span){NULL, 0});
    else
        PyErr_NoMemory();
    buffer_free(&prefix);
    return url;
}

/* Whether a block a walk passes by unread is one Python's views read as the
 * core does: plain thinking, and (`media`) inline typed media; any other is
 * Python's to judge. */
static int passed_by(uint32_t kind, Span body, int media) {
    Span text;
    Media found;
    switch (kind) {
    case BLOCK_THINKING: return read_thinking(body, &text) == WALK_OK;
    case BLOCK_IMAGE:
    case BLOCK_AUDIO:
    case BLOCK_VIDEO: return media && read_media(body, &found) == WALK_OK && inline_media(&found);
    default: return 0;
    }
}

/* AgentScope's `Msg.get_text_content()`: the string content, or the text
 * blocks joined by newlines, None without any (a new reference); the other
 * blocks must be `passed_by` (`media` as there), else Py_NotImplemented
 * (borrowed: Python's); NULL with an exception. */
static PyObject *text_content(const Head *head, int media) {
    if (head->text.p != NULL) return text_of(head->text);
    if (head->blocks.p == NULL) return Py_NewRef(Py_None);
    Reader items = {head->blocks.p, head->blocks.p + head->blocks.n};
    Span body, text = {NULL, 0};
    uint32_t kind;
    int rc, count = 0;
    Buffer joined;
    buffer_init(&joined);
    PyObject *content = Py_NotImplemented;
    while ((rc = next_block(&items, &kind, &body)) == 1) {
        if (kind == BLOCK_TEXT && read_text(body, &text) == WALK_OK) {
            if ((count++ && buffer_put(&joined, "\n", 1) < 0) ||
                buffer_put(&joined, text.p, text.n) < 0) {
                content = PyErr_NoMemory();
                goto done;
            }
        } else if (!passed_by(kind, body, media)) {
            goto done;
        }
    }
    if (rc == 0)
        content = count ? PyUnicode_DecodeUTF8(joined.data, joined.len, NULL) : Py_NewRef(Py_None);
done:
    buffer_free(&joined);
    return content;
}

#endif
