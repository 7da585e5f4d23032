/* libFuzzer: the --cpus LIST parser must reject or accept any bytes without
 * crashing; what it accepts is a non-empty set whose formatted LIST parses
 * back to the same set and formats to itself, and a LIST that does not fit
 * is refused rather than cut. */
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char text[CPULIST_TEXT_MAX], again[CPULIST_TEXT_MAX];
  cpu_set_t set, back;
  char *s = malloc(size + 1);
  const char *why;
  int n;

  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0'; /* argv strings end at the first NUL, as here */
  why = cpulist_parse(s, &set);
  if (why != NULL) {
    if (why[0] == '\0')
      abort();
    free(s);
    return 0;
  }
  if (CPU_COUNT(&set) == 0 || strspn(s, "0123456789,-") != strlen(s))
    abort();
  n = cpulist_format(&set, text, sizeof(text));
  if (n <= 0 || (size_t)n != strlen(text))
    abort();
  if (cpulist_parse(text, &back) != NULL || !CPU_EQUAL(&set, &back))
    abort();
  if (cpulist_format(&back, again, sizeof(again)) != n ||
      strcmp(text, again) != 0)
    abort();
  if (cpulist_format(&set, again, (size_t)n) != -1 || again[0] != '\0')
    abort();
  free(s);
  return 0;
}
