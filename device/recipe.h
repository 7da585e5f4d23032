/* What a response is made of, small enough to keep per exchange so that a
 * duplicate or a retransmission rebuilds identical bytes instead of
 * storing them. */
#ifndef DEV_RECIPE_H
#define DEV_RECIPE_H

#include <stdint.h>

struct reg_entry;

enum recipe_kind {
  RC_EMPTY, /* empty ACK or RST: header only, no token */
  RC_BARE,  /* header + token (4.04, 4.02, 4.05 off the table) */
  RC_OK,    /* header + token + resource tail */
  RC_ERR,   /* header + token + option 65000 (4.05 / 5.03 of a resource) */
  RC_WKC,   /* header + token + a /.well-known/core block */
  RC_UNOBS, /* RC_OK + option 65001 = block2 (the last seq) if >= 0 */
};

/* recipe.observe: what the request asks of the Observe layer. */
enum { OBS_NONE, OBS_REGISTER, OBS_DEREGISTER };

struct recipe {
  uint8_t kind, type, code, tkl;
  uint16_t mid;
  uint8_t token[8];
  uint8_t observe; /* OBS_*: the answer (de)registers an observation */
  int32_t block2;  /* RC_WKC: requested Block2 value, -1 if none;
                      RC_UNOBS: the last seq, -1 if none */
  const struct reg_entry *res;
};

#endif
