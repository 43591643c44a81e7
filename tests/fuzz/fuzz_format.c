/* libFuzzer target: the md superblock, bitmap and partial-parity log
 * decoders, fed a device image (superblock at byte 4096, bitmap regions
 * after it, then the logs of a clustered RAID5/6), the way `clraid
 * examine` walks a member. Built with clang, see tests/local.mk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/md_bitmap.h"
#include "format/md_sb.h"
#include "format/plog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct clr_md_sb sb;
    struct clr_bitmap_sb b0, bs;
    struct clr_err e;
    uint64_t off, stride, bits;
    uint8_t area[CLR_MD_SB_AREA_BYTES];

    if (size < 4096 + CLR_MD_SB_FIXED_BYTES)
        return 0;
    /* The decoder gets exactly what examine reads: 4 KiB, zero-filled
     * past the end of a short image. */
    memset(area, 0, sizeof area);
    memcpy(area, data + 4096, size - 4096 < sizeof area ? size - 4096 : sizeof area);
    /* Size checks on (image size) and off (unknown size). */
    (void)clr_md_sb_decode(area, sizeof area, size / 512, &sb, &e);
    if (clr_md_sb_decode(area, sizeof area, 0, &sb, &e) != 0)
        return 0;
    (void)clr_md_sync_sectors(&sb);
    if (!(sb.feature_map & CLR_MD_FEAT_BITMAP_OFFSET))
        return 0;
    off = (sb.super_offset + (uint64_t)sb.bitmap_offset) * 512;
    if (off >= size || size - off < CLR_BITMAP_SB_BYTES)
        return 0;
    if (clr_bitmap_sb_decode(data + off, size - off, sb.set_uuid, &b0, &e) != 0)
        return 0;
    if (clr_bitmap_check_fits(&sb, &b0, &e) != 0)
        return 0;
    stride = clr_bitmap_stride_bytes(b0.sync_size, b0.chunksize);
    bits = clr_bitmap_bits(b0.sync_size, b0.chunksize);
    for (uint32_t s = 0; s < clr_bitmap_slots(&b0); s++) {
        off = clr_bitmap_slot_offset(&sb, &b0, s);
        if (off >= size || size - off < stride)
            break;
        if (clr_bitmap_sb_decode(data + off, stride, sb.set_uuid, &bs, &e) == 0)
            (void)clr_bitmap_count(data + off + CLR_BITMAP_SB_BYTES, bits);
    }
    if (sb.feature_map & CLR_MD_FEAT_CLRAID_PARITY) {
        static struct clr_plog_hdr h;
        struct clr_plog_layout lay;

        if (clr_plog_layout(&sb, &b0, &lay, &e) != 0)
            return 0;
        for (uint32_t s = 0; s < lay.slots; s++)
            for (uint32_t c = 0; c < CLR_PLOG_COPIES; c++) {
                off = lay.start + s * lay.slot_bytes + c * CLR_PLOG_HDR_BYTES;
                if (off >= size || size - off < CLR_PLOG_HDR_BYTES)
                    return 0;
                (void)clr_plog_hdr_decode(data + off, sb.set_uuid, s, &h, &e);
            }
    }
    return 0;
}
