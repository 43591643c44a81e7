/* Test helper (not installed): corrupts metadata on purpose.
 *   sbpatch FILE OFFSET WIDTH VALUE   write a little-endian integer
 *   sbpatch --fix-csum FILE           recompute the v1.2 sb checksum */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/endian.h"
#include "format/md_sb.h"

int main(int argc, char **argv)
{
    uint8_t buf[CLR_MD_SB_AREA_BYTES];
    int fd;

    if (argc == 3 && strcmp(argv[1], "--fix-csum") == 0) {
        uint32_t max_dev;

        fd = open(argv[2], O_RDWR);
        if (fd < 0 || pread(fd, buf, sizeof buf, 4096) != (ssize_t)sizeof buf)
            return perror(argv[2]), 1;
        max_dev = clr_get_le32(buf + 220);
        if (max_dev > CLR_MD_MAX_DEV_LIMIT)
            max_dev = CLR_MD_MAX_DEV_LIMIT;
        clr_put_le32(buf + 216, clr_md_sb_csum(buf, max_dev));
        if (pwrite(fd, buf, sizeof buf, 4096) != (ssize_t)sizeof buf)
            return perror(argv[2]), 1;
        return close(fd) ? 1 : 0;
    }
    if (argc == 5) {
        unsigned long long off = strtoull(argv[2], NULL, 0);
        int width = atoi(argv[3]);
        unsigned long long v = strtoull(argv[4], NULL, 0);
        uint8_t b[8];

        if (width != 1 && width != 2 && width != 4 && width != 8)
            return fprintf(stderr, "width must be 1, 2, 4 or 8\n"), 2;
        clr_put_le64(b, v);
        fd = open(argv[1], O_RDWR);
        if (fd < 0 || pwrite(fd, b, (size_t)width, (off_t)off) != width)
            return perror(argv[1]), 1;
        return close(fd) ? 1 : 0;
    }
    fprintf(stderr, "usage: sbpatch FILE OFFSET WIDTH VALUE | sbpatch --fix-csum FILE\n");
    return 2;
}
