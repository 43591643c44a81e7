/* Signature probing with libblkid: what is already on a device. */
#include <blkid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char *lookup(blkid_probe pr, const char *name)
{
    const char *v = NULL;

    if (blkid_probe_lookup_value(pr, name, &v, NULL) != 0)
        return NULL;
    return v;
}

int clr_probe_signatures(int fd, struct clr_probe_result *r)
{
    blkid_probe pr = blkid_new_probe();
    int rc;

    memset(r, 0, sizeof *r);
    if (!pr)
        return -ENOMEM;
    if (blkid_probe_set_device(pr, fd, 0, 0) != 0) {
        blkid_free_probe(pr);
        return -EIO;
    }
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID | BLKID_SUBLKS_LABEL);
    blkid_probe_enable_partitions(pr, 1);
    blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
    rc = blkid_do_safeprobe(pr);
    if (rc == 0) {
        const char *type = lookup(pr, "TYPE");
        const char *pttype = lookup(pr, "PTTYPE");
        const char *uuid = lookup(pr, "UUID");
        const char *usage = lookup(pr, "USAGE");

        r->found = true;
        if (type && strcmp(type, "linux_raid_member") == 0)
            snprintf(r->what, sizeof r->what, "md/clraid member of array UUID=%s", uuid ? uuid : "?");
        else if (type)
            snprintf(r->what, sizeof r->what, "%s %s%s%s", type,
                     usage && strcmp(usage, "other") ? usage : "signature", uuid ? " UUID=" : "",
                     uuid ? uuid : "");
        else if (pttype)
            snprintf(r->what, sizeof r->what, "%s partition table", pttype);
        else
            snprintf(r->what, sizeof r->what, "unknown signature");
    } else if (rc == -2) {
        r->found = true;
        snprintf(r->what, sizeof r->what, "several conflicting signatures");
    } else if (rc < 0) {
        blkid_free_probe(pr);
        return -EIO;
    }
    blkid_free_probe(pr);
    return 0;
}

int clr_wipe_signatures(int fd)
{
    blkid_probe pr = blkid_new_probe();
    int rc = 0;

    if (!pr)
        return -ENOMEM;
    if (blkid_probe_set_device(pr, fd, 0, 0) != 0) {
        blkid_free_probe(pr);
        return -EIO;
    }
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_BADCSUM);
    blkid_probe_enable_partitions(pr, 1);
    blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT);
    while (blkid_do_probe(pr) == 0) {
        if (blkid_do_wipe(pr, 0) != 0) {
            rc = -EIO;
            break;
        }
    }
    blkid_free_probe(pr);
    return rc;
}
