/* Interned keys and values the walks write, made once at import. A provider
 * file adds its own with the same macro (see openai.h). Part of _ccore.c. */
#ifndef AGENTSCOPE_CCORE_NAMES_H
#define AGENTSCOPE_CCORE_NAMES_H

#include <Python.h>

/* NAME(variable, text): every name shared by more than one walk. */
#define SHARED_NAMES(NAME)                                                                 \
    NAME(k_role, "role")                                                                   \
    NAME(k_name, "name")                                                                   \
    NAME(k_content, "content")                                                             \
    NAME(k_type, "type")                                                                   \
    NAME(k_text, "text")                                                                   \
    NAME(k_id, "id")                                                                       \
    NAME(s_user, "user")                                                                   \
    NAME(s_assistant, "assistant")                                                         \
    NAME(s_system, "system")                                                               \
    NAME(s_text, "text")                                                                   \
    NAME(s_thinking, "thinking")                                                           \
    NAME(s_empty, "")                                                                      \
    NAME(s_serialize, "SerializeToString")                                                 \
    NAME(s_raw_input, "raw_input")                                                         \
    NAME(s_image, "image")                                                                 \
    NAME(s_audio, "audio")                                                                 \
    NAME(s_video, "video")                                                                 \
    NAME(s_skipped_thinking, "Unsupported block type thinking in the message, skipped.")    \
    NAME(s_skipped_image, "Unsupported block type image in the message, skipped.")        \
    NAME(s_skipped_audio, "Unsupported block type audio in the message, skipped.")        \
    NAME(s_skipped_video, "Unsupported block type video in the message, skipped.")

#define DECLARE_NAME(variable, text) static PyObject *variable;
#define INTERN_NAME(variable, text)                                                        \
    if ((variable = PyUnicode_InternFromString(text)) == NULL) return -1;

SHARED_NAMES(DECLARE_NAME)

static int init_shared_names(void) {
    SHARED_NAMES(INTERN_NAME)
    return 0;
}

#endif
