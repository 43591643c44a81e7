/*
 * FAKE libdlm for unit tests of the dlm backend: the libdlm entry points
 * the backend uses, implemented in-process on top of the pure lock table.
 * This is not the DLM; it only lets the backend's glue be exercised on a
 * machine without a kernel DLM.
 */
#ifndef CLRAID_TESTS_LOCK_FAKE_LIBDLM_H
#define CLRAID_TESTS_LOCK_FAKE_LIBDLM_H

#include <stdbool.h>

/** Make the fake behave like this machine: every lockspace call fails
 *  with errno 0 (no kernel DLM). */
void fake_dlm_set_unavailable(bool unavailable);
/** Number of dlm_ls_lock() calls seen (for tests). */
int fake_dlm_lock_calls(void);

/** The most recently opened lockspace handle dies without unlocking (its
 *  process or node): its locks go, PW/EX LVBs are marked not valid, its
 *  waiters... are granted; the handle keeps working with no locks. */
void fake_dlm_crash_newest(void);

#endif
