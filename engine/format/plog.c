/* The partial-parity log's place and header (see plog.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format/endian.h"
#include "format/plog.h"

/* header offsets */
enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_CSUM = 8,
    H_SLOT = 12,
    H_GEN = 16,
    H_NENTRIES = 24,
    H_UUID = 28,
    H_ENTRIES = 64,
};

uint32_t clr_crc32c(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    /* bit by bit: headers are 4 KiB and rare; no table, nothing shared */
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78U : crc >> 1;
    }
    return ~crc;
}

static uint64_t align4k(uint64_t v)
{
    return (v + 4095) & ~(uint64_t)4095;
}

uint64_t clr_plog_end(uint64_t meta_end, uint32_t slots)
{
    return align4k(meta_end) + (uint64_t)slots * CLR_PLOG_SLOT_BYTES;
}

int clr_plog_layout(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, struct clr_plog_layout *out,
                    struct clr_err *e)
{
    uint32_t slots = clr_bitmap_slots(b);

    out->start = align4k(clr_bitmap_slot_offset(sb, b, slots));
    out->slot_bytes = CLR_PLOG_SLOT_BYTES;
    out->slots = slots;
    out->end = out->start + (uint64_t)slots * CLR_PLOG_SLOT_BYTES;
    if (out->end > sb->data_offset * 512)
        return clr_err_set(e, -ERANGE,
                           "the partial-parity logs of %u slots end at byte %" PRIu64
                           ", past data_offset (byte %" PRIu64 ")",
                           slots, out->end, sb->data_offset * 512);
    return 0;
}

int clr_plog_hdr_encode(const struct clr_plog_hdr *h, uint8_t *buf)
{
    if (h->nentries > CLR_PLOG_MAX_ENTRIES)
        return -EINVAL;
    memset(buf, 0, CLR_PLOG_HDR_BYTES);
    clr_put_le32(buf + H_MAGIC, CLR_PLOG_MAGIC);
    clr_put_le32(buf + H_VERSION, CLR_PLOG_VERSION);
    clr_put_le32(buf + H_SLOT, h->slot);
    clr_put_le64(buf + H_GEN, h->gen);
    clr_put_le32(buf + H_NENTRIES, h->nentries);
    memcpy(buf + H_UUID, h->set_uuid, 16);
    for (uint32_t i = 0; i < h->nentries; i++) {
        uint8_t *p = buf + H_ENTRIES + 32 * i;

        clr_put_le64(p, h->e[i].stripe);
        clr_put_le64(p + 8, h->e[i].changed);
        clr_put_le32(p + 16, h->e[i].pp_offset);
        clr_put_le32(p + 20, h->e[i].pp_sectors);
        clr_put_le32(p + 24, h->e[i].first);
        clr_put_le32(p + 28, h->e[i].flags);
    }
    clr_put_le32(buf + H_CSUM, clr_crc32c(0, buf, CLR_PLOG_HDR_BYTES));
    return 0;
}

int clr_plog_hdr_decode(const uint8_t *buf, const uint8_t uuid[16], uint32_t slot, struct clr_plog_hdr *h,
                        struct clr_err *e)
{
    uint8_t copy[CLR_PLOG_HDR_BYTES];
    uint32_t csum;
    bool zero = true;

    for (uint32_t i = 0; i < CLR_PLOG_HDR_BYTES && zero; i++)
        zero = buf[i] == 0;
    if (zero)
        return clr_err_set(e, -ENODATA, "log header of slot %u never written", slot);
    memcpy(copy, buf, CLR_PLOG_HDR_BYTES);
    csum = clr_get_le32(copy + H_CSUM);
    clr_put_le32(copy + H_CSUM, 0);
    if (clr_get_le32(buf + H_MAGIC) != CLR_PLOG_MAGIC || clr_crc32c(0, copy, CLR_PLOG_HDR_BYTES) != csum)
        return clr_err_set(e, -EBADMSG, "log header of slot %u: bad magic or checksum (torn or not a log)",
                           slot);
    if (clr_get_le32(buf + H_VERSION) != CLR_PLOG_VERSION)
        return clr_err_set(e, -EPROTO, "log header of slot %u: version %u, this clraid reads %u", slot,
                           clr_get_le32(buf + H_VERSION), CLR_PLOG_VERSION);
    memset(h, 0, sizeof *h);
    memcpy(h->set_uuid, buf + H_UUID, 16);
    h->slot = clr_get_le32(buf + H_SLOT);
    h->gen = clr_get_le64(buf + H_GEN);
    h->nentries = clr_get_le32(buf + H_NENTRIES);
    if (memcmp(h->set_uuid, uuid, 16) != 0 || h->slot != slot)
        return clr_err_set(e, -ESTALE, "log header of slot %u belongs to another array or slot (%u)", slot,
                           h->slot);
    if (h->nentries > CLR_PLOG_MAX_ENTRIES)
        return clr_err_set(e, -EBADMSG, "log header of slot %u: %u entries, at most %u", slot, h->nentries,
                           CLR_PLOG_MAX_ENTRIES);
    for (uint32_t i = 0; i < h->nentries; i++) {
        const uint8_t *p = buf + H_ENTRIES + 32 * i;

        h->e[i].stripe = clr_get_le64(p);
        h->e[i].changed = clr_get_le64(p + 8);
        h->e[i].pp_offset = clr_get_le32(p + 16);
        h->e[i].pp_sectors = clr_get_le32(p + 20);
        h->e[i].first = clr_get_le32(p + 24);
        h->e[i].flags = clr_get_le32(p + 28);
    }
    return 0;
}
