/* JSON text helpers shared by the summary writers (stats.c, rt.c). */
#ifndef GE_JSON_H
#define GE_JSON_H

#include <stdio.h>

/* s as a JSON string (quotes and escapes). */
void ge_json_str(FILE *f, const char *s);

#endif
