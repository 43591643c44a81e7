/* clraid array core: the legs of one request (one I/O per member) and
 * what a failed leg means for its member.  Below: array_state.c,
 * array_super.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

/* Submits one leg; a refused submission completes the leg at once. */
void clr_arr_leg_submit(struct arr_leg *l, struct clr_io_wg *wg, struct arr_member *m, bool write, void *buf,
                        size_t len, uint64_t dsec, unsigned ioflags)
{
    int s;

    *l = (struct arr_leg){ .wg = wg, .m = m, .write = write };
    clr_io_wg_add(wg, 1);
    if (write) {
        atomic_fetch_add_explicit(&m->n_writes, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->write_bytes, len, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&m->n_reads, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->read_bytes, len, memory_order_relaxed);
    }
    if (write && !buf) /* mirrors: write zeroes without a data buffer */
        s = clr_io_zero(m->io, len, arr_dev_off(m, dsec), clr_arr_leg_done, l);
    else if (write)
        s = clr_io_write(m->io, buf, len, arr_dev_off(m, dsec), ioflags, clr_arr_leg_done, l);
    else
        s = clr_io_read(m->io, buf, len, arr_dev_off(m, dsec), clr_arr_leg_done, l);
    if (s < 0)
        clr_arr_leg_done(l, s);
}

/* Fails every member whose leg failed. -EAGAIN if one of them was the last
 * copy (the array is frozen); *bad counts failed legs. */
int clr_arr_legs_settle(struct clr_array *a, struct arr_req *rq, struct arr_leg *legs, unsigned n,
                        unsigned *bad)
{
    int rc = 0;

    for (unsigned i = 0; i < n; i++)
        if (legs[i].res < 0 && !legs[i].behind)
            clr_arr_note_io_error(a, legs[i].m, legs[i].res, legs[i].write);
    for (unsigned i = 0; i < n; i++) {
        if (legs[i].res < 0 && legs[i].behind) {
            /* not acked before every node stopped reading it */
            if (clr_arr_behind_failed(a, rq, legs[i].m) == -EAGAIN)
                rc = -EAGAIN;
            continue;
        }
        if (legs[i].res >= 0 || legs[i].behind)
            continue;
        if (bad)
            (*bad)++;
        if (clr_arr_member_failed_counted(a, rq, legs[i].m, legs[i].res) == -EAGAIN)
            rc = -EAGAIN;
    }
    return rc;
}

/* ======================= mirror: RAID1 / RAID10 ======================= */
