// ALSA for Swift: the library header plus the few helpers Swift cannot express itself.
#pragma once
#include <alsa/asoundlib.h>

// ALSA prints "ALSA lib pcm.c:… Unknown PCM" to stderr on every failed open; a daemon reports errors itself,
// with their context, so the library's own printing is switched off. (A handler is C-variadic: Swift cannot write one.)
static void syncups_alsa_silent_error_handler(const char *file, int line, const char *function, int err,
                                              const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void syncups_alsa_silence_errors(void) {
    snd_lib_error_set_handler(syncups_alsa_silent_error_handler);
}
