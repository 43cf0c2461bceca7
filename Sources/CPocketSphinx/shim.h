// PocketSphinx 0.8+5prealpha (Debian 12) for Swift.
//
// cmd_ln_init() is C-variadic, which Swift cannot call; configuration goes through cmd_ln_parse_r() with an
// argv array instead, and the one helper below keeps the ps_args() table out of Swift's sight.
#pragma once
#include <pocketsphinx.h>
#include <sphinxbase/err.h>

static inline cmd_ln_t *syncups_ps_config(int argc, char **argv) {
    return cmd_ln_parse_r(NULL, ps_args(), argc, argv, 1);
}
