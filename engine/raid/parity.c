/* RAID5/6 parity over ISA-L. See parity.h. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "raid/parity.h"

uint8_t clr_gf_mul(uint8_t a, uint8_t b)
{
    /* ISA-L's erasure code field is GF(2^8) mod 0x11d, md's raid6 field;
     * tests/raid/test_parity.c pins that against a slow reference. */
    return gf_mul(a, b);
}

uint8_t clr_gf_exp2(unsigned e)
{
    uint8_t v = 1;

    for (e %= 255; e; e--)
        v = (uint8_t)((v << 1) ^ ((v & 0x80) ? 0x1d : 0));
    return v;
}

static bool len_ok(size_t len)
{
    return len && len % CLR_PARITY_LEN_MULTIPLE == 0 && len <= INT_MAX;
}

static bool buf_ok(const void *b)
{
    return b && (uintptr_t)b % CLR_PARITY_ALIGN == 0;
}

static bool bufs_ok(unsigned n, void *const *b)
{
    for (unsigned i = 0; i < n; i++)
        if (!buf_ok(b[i]))
            return false;
    return true;
}

/* qexp == NULL or a permutation of 0..ndata-1: ISA-L's pq_gen applies. */
static bool qexp_dense(unsigned ndata, const uint8_t *qexp)
{
    bool seen[256] = { false };

    if (!qexp)
        return true;
    for (unsigned k = 0; k < ndata; k++) {
        if (qexp[k] >= ndata || seen[qexp[k]])
            return false;
        seen[qexp[k]] = true;
    }
    return true;
}

static bool qexp_ok(unsigned ndata, const uint8_t *qexp)
{
    bool seen[256] = { false };

    if (!qexp)
        return true;
    for (unsigned k = 0; k < ndata; k++) {
        if (qexp[k] >= 255 || seen[qexp[k]])
            return false;
        seen[qexp[k]] = true;
    }
    return true;
}

static uint8_t qcoef(const uint8_t *qexp, unsigned k)
{
    return clr_gf_exp2(qexp ? qexp[k] : k);
}

/* dst[r] = sum_k coef[r*k + j] * src[j], for @rows outputs. */
static int gf_dot(unsigned k, unsigned rows, const uint8_t *coef, size_t len, void *const *src,
                  void *const *dst)
{
    unsigned char *s[CLR_PARITY_MAX_DATA + 2], *d[2];
    unsigned char *tbls = malloc((size_t)32 * k * rows);

    if (!tbls)
        return -ENOMEM;
    for (unsigned j = 0; j < k; j++)
        s[j] = src[j];
    for (unsigned r = 0; r < rows; r++)
        d[r] = dst[r];
    ec_init_tables((int)k, (int)rows, (unsigned char *)coef, tbls);
    ec_encode_data((int)len, (int)k, (int)rows, tbls, s, d);
    free(tbls);
    return 0;
}

int clr_parity_xor_gen(unsigned ndata, size_t len, void *const *data, void *p)
{
    void *v[CLR_PARITY_MAX_DATA + 1];

    if (!ndata || ndata > CLR_PARITY_MAX_DATA || !len_ok(len) || !bufs_ok(ndata, data) || !buf_ok(p))
        return -EINVAL;
    if (ndata == 1) {
        memcpy(p, data[0], len);
        return 0;
    }
    memcpy(v, data, ndata * sizeof *v);
    v[ndata] = p;
    return xor_gen((int)ndata + 1, (int)len, v) ? -EINVAL : 0;
}

int clr_parity_xor_check(unsigned ndata, size_t len, void *const *data, const void *p)
{
    void *v[CLR_PARITY_MAX_DATA + 1];

    if (!ndata || ndata > CLR_PARITY_MAX_DATA || !len_ok(len) || !bufs_ok(ndata, data) || !buf_ok(p))
        return -EINVAL;
    if (ndata == 1)
        return memcmp(data[0], p, len) ? -EBADMSG : 0;
    memcpy(v, data, ndata * sizeof *v);
    v[ndata] = (void *)p; /* ISA-L only reads */
    return xor_check((int)ndata + 1, (int)len, v) ? -EBADMSG : 0;
}

static int pq_args_ok(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, const void *p,
                      const void *q)
{
    return ndata && ndata <= CLR_PARITY_MAX_DATA && len_ok(len) && bufs_ok(ndata, data) && buf_ok(p) &&
           buf_ok(q) && qexp_ok(ndata, qexp);
}

/* ISA-L takes the data in coefficient order: slot i gets g^i. */
static void order_by_slot(unsigned ndata, void *const *data, const uint8_t *qexp, void **v)
{
    for (unsigned k = 0; k < ndata; k++)
        v[qexp ? qexp[k] : k] = data[k];
}

/* P and Q through the general GF dot product (any coefficients). */
static int pq_dot(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, void *p, void *q)
{
    uint8_t coef[2 * CLR_PARITY_MAX_DATA];
    void *dst[2] = { p, q };

    for (unsigned k = 0; k < ndata; k++) {
        coef[k] = 1;
        coef[ndata + k] = qcoef(qexp, k);
    }
    return gf_dot(ndata, 2, coef, len, data, dst);
}

int clr_parity_pq_gen(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, void *p, void *q)
{
    void *v[CLR_PARITY_MAX_DATA + 2];

    if (!pq_args_ok(ndata, len, data, qexp, p, q))
        return -EINVAL;
    if (!qexp_dense(ndata, qexp) || ndata < 2)
        return pq_dot(ndata, len, data, qexp, p, q);
    order_by_slot(ndata, data, qexp, v);
    v[ndata] = p;
    v[ndata + 1] = q;
    return pq_gen((int)ndata + 2, (int)len, v) ? -EINVAL : 0;
}

int clr_parity_pq_check(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, const void *p,
                        const void *q)
{
    void *v[CLR_PARITY_MAX_DATA + 2];
    int rc;

    if (!pq_args_ok(ndata, len, data, qexp, p, q))
        return -EINVAL;
    if (qexp_dense(ndata, qexp) && ndata >= 2) {
        order_by_slot(ndata, data, qexp, v);
        v[ndata] = (void *)p; /* ISA-L only reads */
        v[ndata + 1] = (void *)q;
        return pq_check((int)ndata + 2, (int)len, v) ? -EBADMSG : 0;
    }

    uint8_t *tmp = aligned_alloc(CLR_PARITY_ALIGN, 2 * len);

    if (!tmp)
        return -ENOMEM;
    rc = pq_dot(ndata, len, data, qexp, tmp, tmp + len);
    if (!rc && (memcmp(tmp, p, len) || memcmp(tmp + len, q, len)))
        rc = -EBADMSG;
    free(tmp);
    return rc;
}

/* clr_parity_rmw()'s new data: CLR_PARITY_RMW_NEW_ALIGN is enough */
static bool news_ok(unsigned n, void *const *b)
{
    for (unsigned i = 0; i < n; i++)
        if (!b[i] || (uintptr_t)b[i] % CLR_PARITY_RMW_NEW_ALIGN != 0)
            return false;
    return true;
}

/* dst ^= a ^ b, word by word (the compiler vectorises it; it is bound by
 * memory bandwidth anyway). @b may be only 8-byte aligned. */
static void xor2_into(size_t len, const void *a, const void *b, void *dst)
{
    const uint64_t *x = a, *y = b;
    uint64_t *d = dst;

    for (size_t i = 0; i < len / sizeof *d; i++)
        d[i] ^= x[i] ^ y[i];
}

int clr_parity_rmw(unsigned nchanged, size_t len, void *const *olddata, void *const *newdata,
                   const uint8_t *qexp, void *p, void *q)
{
    unsigned char tbl[32];

    if (!nchanged || nchanged > CLR_PARITY_MAX_DATA || !len_ok(len) || !bufs_ok(nchanged, olddata) ||
        !news_ok(nchanged, newdata) || !buf_ok(p) || (q && !buf_ok(q)) || !qexp_ok(nchanged, qexp))
        return -EINVAL;
    for (unsigned i = 0; i < nchanged; i++) {
        xor2_into(len, olddata[i], newdata[i], p);
        if (!q)
            continue;
        /* Q ^= c*old ^ c*new, as two multiply-accumulate passes */
        unsigned char c = qcoef(qexp, i);

        ec_init_tables(1, 1, &c, tbl);
        gf_vect_mad((int)len, 1, 0, tbl, olddata[i], q);
        gf_vect_mad((int)len, 1, 0, tbl, newdata[i], q);
    }
    return 0;
}

int clr_parity_raid5_recover(unsigned ndata, size_t len, void *const *blocks, unsigned lost)
{
    void *src[CLR_PARITY_MAX_DATA];
    unsigned n = 0;

    if (!ndata || ndata > CLR_PARITY_MAX_DATA || lost > ndata)
        return -EINVAL;
    for (unsigned b = 0; b <= ndata; b++)
        if (b != lost)
            src[n++] = blocks[b];
    /* P is the XOR of the data, so any block is the XOR of the rest. */
    return clr_parity_xor_gen(ndata, len, src, blocks[lost]);
}

/* Row of the code for block @b over the data: unit vector for data, all
 * ones for P, g^qexp for Q. */
static void code_row(unsigned ndata, const uint8_t *qexp, unsigned b, uint8_t *row)
{
    for (unsigned k = 0; k < ndata; k++) {
        if (b < ndata)
            row[k] = k == b;
        else if (b == ndata)
            row[k] = 1;
        else
            row[k] = qcoef(qexp, k);
    }
}

/* Any other loss pattern: pick ndata surviving blocks (data first, then
 * P, then Q), invert their code rows, and express each lost block as a
 * GF combination of the survivors; one ISA-L pass writes them all. */
static int raid6_solve(unsigned ndata, size_t len, void *const *blocks, const uint8_t *qexp, unsigned nlost,
                       const unsigned *lost)
{
    size_t kk = (size_t)ndata * ndata;
    uint8_t *a = malloc(2 * kk + (size_t)nlost * ndata);
    void *surv[CLR_PARITY_MAX_DATA], *dst[2];
    uint8_t row[CLR_PARITY_MAX_DATA];
    unsigned ns = 0;
    int rc;

    if (!a)
        return -ENOMEM;
    uint8_t *inv = a + kk, *dec = inv + kk;

    for (unsigned b = 0; b < ndata + 2 && ns < ndata; b++) {
        if (b == lost[0] || (nlost > 1 && b == lost[1]))
            continue;
        code_row(ndata, qexp, b, a + (size_t)ns * ndata);
        surv[ns++] = blocks[b];
    }
    if (gf_invert_matrix(a, inv, (int)ndata) != 0) {
        /* Cannot happen for distinct Q coefficients: the code is MDS. */
        free(a);
        return -EINVAL;
    }
    for (unsigned l = 0; l < nlost; l++) {
        code_row(ndata, qexp, lost[l], row);
        for (unsigned j = 0; j < ndata; j++) {
            uint8_t acc = 0;

            for (unsigned i = 0; i < ndata; i++)
                acc ^= gf_mul(row[i], inv[(size_t)i * ndata + j]);
            dec[(size_t)l * ndata + j] = acc;
        }
        dst[l] = blocks[lost[l]];
    }
    rc = gf_dot(ndata, nlost, dec, len, surv, dst);
    free(a);
    return rc;
}

int clr_parity_raid6_recover(unsigned ndata, size_t len, void *const *blocks, const uint8_t *qexp,
                             unsigned nlost, const unsigned *lost)
{
    unsigned pidx = ndata, qidx = ndata + 1;

    if (!ndata || ndata > CLR_PARITY_MAX_DATA || !len_ok(len) || !bufs_ok(ndata + 2, blocks) ||
        !qexp_ok(ndata, qexp) || nlost < 1 || nlost > 2 || !lost)
        return -EINVAL;
    for (unsigned l = 0; l < nlost; l++)
        if (lost[l] > qidx)
            return -EINVAL;
    if (nlost == 2 && lost[0] == lost[1])
        return -EINVAL;

    /* One data block or P: plain XOR with P, the cheap common case. */
    if (nlost == 1 && lost[0] != qidx)
        return clr_parity_raid5_recover(ndata, len, blocks, lost[0]);
    /* Both parities: recompute them. */
    if (nlost == 2 && (lost[0] == pidx || lost[0] == qidx) && (lost[1] == pidx || lost[1] == qidx))
        return clr_parity_pq_gen(ndata, len, blocks, qexp, blocks[pidx], blocks[qidx]);
    return raid6_solve(ndata, len, blocks, qexp, nlost, lost);
}
