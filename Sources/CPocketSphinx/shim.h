// PocketSphinx 0.8+5prealpha (Debian 12) for Swift: the few functions syncupsd calls, declared here.
//
// Why not #include <pocketsphinx.h>: its headers need four -I paths, which only pkg-config provides, and
// pocketsphinx.pc also links libsphinxad, which drags libpulse, libsndfile, X11 and 30 more libraries into
// the daemon (41 in all): slower start and more memory for nothing, as syncupsd does its own ALSA capture.
// The declarations below match Debian's headers exactly (pocketsphinx.h, sphinxbase/cmd_ln.h, err.h);
// PocketSphinxTests exercise every one of them against the real library.
//
// cmd_ln_init() is C-variadic, which Swift cannot call; configuration goes through cmd_ln_parse_r() with
// an argv array, and the helper below keeps the ps_args() table out of Swift's sight.
#pragma once
#include <stddef.h>
#include <stdio.h>

typedef struct ps_decoder_s ps_decoder_t;
typedef struct ps_seg_s ps_seg_t;
typedef struct cmd_ln_s cmd_ln_t;
typedef struct arg_s arg_t;

const arg_t *ps_args(void);
cmd_ln_t *cmd_ln_parse_r(cmd_ln_t *inout_cmdln, const arg_t *defn, int argc, char *argv[], int strict);
int cmd_ln_free_r(cmd_ln_t *cmdln);
void err_set_logfp(FILE *stream);

ps_decoder_t *ps_init(cmd_ln_t *config);
int ps_free(ps_decoder_t *ps);
int ps_start_utt(ps_decoder_t *ps);
int ps_process_raw(ps_decoder_t *ps, const short *data, size_t n_samples, int no_search, int full_utt);
int ps_end_utt(ps_decoder_t *ps);
const char *ps_get_hyp(ps_decoder_t *ps, int *out_best_score);
unsigned char ps_get_in_speech(ps_decoder_t *ps);

ps_seg_t *ps_seg_iter(ps_decoder_t *ps);
ps_seg_t *ps_seg_next(ps_seg_t *seg);
const char *ps_seg_word(ps_seg_t *seg);
void ps_seg_frames(ps_seg_t *seg, int *out_sf, int *out_ef);

static inline cmd_ln_t *syncups_ps_config(int argc, char **argv) {
    return cmd_ln_parse_r(NULL, ps_args(), argc, argv, 1);
}
