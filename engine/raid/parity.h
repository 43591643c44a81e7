/* RAID5/6 parity over ISA-L: P (XOR) and Q (Reed-Solomon syndrome over
 * GF(2^8), polynomial 0x11d, generator g = 2, exactly as Linux md's
 * raid6), checks, and reconstruction of lost blocks. Pure computation on
 * caller buffers.
 *
 * Q = sum over data chunks k of g^qexp[k] * D_k. qexp[] comes from
 * clr_raid_stripe_roles() (md's syndrome slot of each data chunk); pass
 * NULL for qexp[k] = k, which is md's order for its default
 * left-symmetric layout.
 *
 * Buffers: every block is @len bytes, @len a non-zero multiple of
 * CLR_PARITY_LEN_MULTIPLE, and every block address aligned to
 * CLR_PARITY_ALIGN (ISA-L's AVX2/AVX-512 kernels need 32/64-byte aligned
 * vectors; O_DIRECT page buffers always qualify). Functions return
 * -EINVAL when these do not hold. Blocks must not overlap. */
#ifndef CLRAID_RAID_PARITY_H
#define CLRAID_RAID_PARITY_H

#include <stddef.h>
#include <stdint.h>

#define CLR_PARITY_ALIGN 64
/** clr_parity_rmw()'s new data may be less aligned: its kernels (a word
 * XOR and ISA-L's gf_vect_mad, built with unaligned loads) need 8 bytes. */
#define CLR_PARITY_RMW_NEW_ALIGN 8
#define CLR_PARITY_LEN_MULTIPLE  64
/** Most data blocks in one stripe (RAID6 needs distinct g^i, i < 255). */
#define CLR_PARITY_MAX_DATA 253

/** Multiplies in GF(2^8) with md's polynomial 0x11d. */
uint8_t clr_gf_mul(uint8_t a, uint8_t b);
/** g^e for the generator g = 2. */
uint8_t clr_gf_exp2(unsigned e);

/** P = XOR of the @ndata blocks @data (@ndata >= 1; one block is copied,
 *  as for a 2-member RAID5). Returns 0 or -EINVAL. */
int clr_parity_xor_gen(unsigned ndata, size_t len, void *const *data, void *p);

/** 0 if @p is the XOR of @data, -EBADMSG if not, -EINVAL on bad
 *  arguments. */
int clr_parity_xor_check(unsigned ndata, size_t len, void *const *data, const void *p);

/** Computes P and Q of @ndata (>= 1) data blocks. Dense qexp (a
 *  permutation of 0..ndata-1, md's own layouts) runs ISA-L's pq_gen;
 *  sparse qexp (DDF layouts) runs the general GF dot product. Returns 0,
 *  -EINVAL or -ENOMEM. */
int clr_parity_pq_gen(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, void *p, void *q);

/** 0 if @p and @q match @data, -EBADMSG if either does not, -EINVAL,
 *  -ENOMEM. */
int clr_parity_pq_check(unsigned ndata, size_t len, void *const *data, const uint8_t *qexp, const void *p,
                        const void *q);

/** Read-modify-write update of parity for @nchanged data blocks replaced
 *  in place: for each i, @olddata[i] is the block's previous content and
 *  @newdata[i] its new content, with Q exponent @qexp[i] (the qexp of its
 *  data index in the stripe; NULL means exponent i). P ^= old ^ new, and,
 *  if @q is not NULL (RAID6), Q ^= g^qexp (old ^ new). Costs two reads per
 *  changed block instead of reading the whole stripe. Returns 0 or
 *  -EINVAL. */
int clr_parity_rmw(unsigned nchanged, size_t len, void *const *olddata, void *const *newdata,
                   const uint8_t *qexp, void *p, void *q);

/** RAID5 stripe: @blocks[0..ndata-1] the data, @blocks[ndata] P. Rebuilds
 *  block @lost (data or P) in place from the others. Returns 0 or
 *  -EINVAL. */
int clr_parity_raid5_recover(unsigned ndata, size_t len, void *const *blocks, unsigned lost);

/** RAID6 stripe: @blocks[0..ndata-1] the data (@ndata >= 1), @blocks[ndata]
 *  P, @blocks[ndata+1] Q. Rebuilds the @nlost (1 or 2) blocks whose
 *  indices are in @lost, in place, from the others: any one or two of
 *  data, P and Q. Returns 0, -EINVAL or -ENOMEM. */
int clr_parity_raid6_recover(unsigned ndata, size_t len, void *const *blocks, const uint8_t *qexp,
                             unsigned nlost, const unsigned *lost);

#endif
