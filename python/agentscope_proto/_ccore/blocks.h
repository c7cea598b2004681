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

#endif
