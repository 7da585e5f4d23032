/* CPU lists: the LIST of `--cpus LIST` ("1", "0-3", "1,3-5"), the syntax of
 * Linux's Cpus_allowed_list and `taskset -c` (docs/formats.md, "CPU list").
 * One copy for both programs: wotbench-ge compiles this file too. */
#ifndef CPULIST_H
#define CPULIST_H

#include <sched.h>
#include <stddef.h>

/* Room for any set as text, NUL included: each CPU appears at most once,
 * as at most 4 digits and one separator. */
#define CPULIST_TEXT_MAX (5 * CPU_SETSIZE + 1)

/* LIST -> *set. Items are CPU numbers N or ranges A-B (A <= B), decimal,
 * 0 .. CPU_SETSIZE - 1, separated by single commas, no spaces; at least
 * one. Returns NULL, or what is wrong as a phrase that ends in "got" (for
 * "error: --cpus: WHY 'LIST'"). */
const char *cpulist_parse(const char *s, cpu_set_t *set);

/* *set -> LIST, ascending, runs of two or more CPUs as ranges: the kernel's
 * own Cpus_allowed_list form ("" for an empty set). Returns the length, or
 * -1 when it does not fit in cap bytes. */
int cpulist_format(const cpu_set_t *set, char *out, size_t cap);

/* Pins the calling thread, and so every thread it starts afterwards, to
 * exactly *want (list: its text, for messages), and reads back in *got
 * what is in force. Returns 0; 2 when the list names a CPU this process
 * may not use (offline, absent, or outside its cpuset: the kernel refuses
 * the list, or keeps only part of it); 1 when a syscall failed otherwise.
 * Not 0: why holds one line without "error: ". */
int cpulist_pin(const char *list, const cpu_set_t *want, cpu_set_t *got,
                char *why, size_t cap);

#endif
