/* Shared pieces of the `clraid` command-line tool. */
#ifndef CLRAID_CLI_CLI_H
#define CLRAID_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/** One subcommand: `clraid NAME ...`. Returns the process exit code. */
struct clr_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

int clr_cmd_create(int argc, char **argv);
int clr_cmd_examine(int argc, char **argv);
int clr_cmd_start(int argc, char **argv);
int clr_cmd_stop(int argc, char **argv);
int clr_cmd_status(int argc, char **argv);
int clr_cmd_fail(int argc, char **argv);
int clr_cmd_remove(int argc, char **argv);
int clr_cmd_add(int argc, char **argv);
int clr_cmd_readd(int argc, char **argv);
int clr_cmd_probe(int argc, char **argv);
int clr_cmd_check(int argc, char **argv);
int clr_cmd_repair(int argc, char **argv);
int clr_cmd_thaw(int argc, char **argv);
int clr_cmd_fault(int argc, char **argv);
int clr_cmd_ctl(int argc, char **argv);

/** Prints "clraid CMD: MESSAGE" to stderr as one line. */
void clr_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** An opened member candidate. */
struct clr_dev {
    const char *path;
    int fd;
    bool is_blk;
    uint64_t bytes;
    dev_t st_dev;
    ino_t st_ino;
    dev_t st_rdev;
};

/** Opens @path with @flags, checks it is a block device or a regular file
 *  and reads its size. On failure prints one line for @cmd and returns -1. */
int clr_dev_open(const char *cmd, const char *path, int flags, struct clr_dev *d);
void clr_dev_close(struct clr_dev *d);

/** True if @a and @b are the same device or file. */
bool clr_dev_same(const struct clr_dev *a, const struct clr_dev *b);

/** Full-length positional I/O; 0 or -errno (-EIO on a short device). */
int clr_pread_full(int fd, void *buf, size_t len, uint64_t off);
int clr_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/** Fills @buf with random bytes from getrandom(2); 0 or -errno. */
int clr_random_bytes(void *buf, size_t len);

/** What libblkid finds on a device (filesystem, partition table, RAID). */
struct clr_probe_result {
    bool found;
    char what[160]; /* e.g. "an ext4 filesystem (UUID=...)" */
};

/** Probes @fd for any signature. 0 (result filled) or -errno. */
int clr_probe_signatures(int fd, struct clr_probe_result *r);

/** Erases every signature libblkid finds on @fd (like wipefs -a). */
int clr_wipe_signatures(int fd);

/* ---- run files and the control socket (cli_run.c) ---- */

/** Default directory of NAME.sock, NAME.ctl, NAME.pid and NAME.log. */
#define CLR_RUN_DIR_DEFAULT "/run/clraid"
/** Timeout of one control request, milliseconds. */
#define CLR_CTL_TIMEOUT_MS 30000

/** Checks an array name (1-64 of [A-Za-z0-9_.-], not starting with '.');
 *  prints one line for @cmd and returns -1 if bad. */
int clr_name_check(const char *cmd, const char *name);

/** "@dir/@name@ext" into @buf; -1 (after one line for @cmd) if too long. */
int clr_run_path(const char *cmd, char *buf, size_t size, const char *dir, const char *name, const char *ext);

/** True if @pid is a live process (not a zombie). */
bool clr_pid_alive(pid_t pid);

/** Pid in @dir/@name.pid if that process is alive, else 0. */
pid_t clr_run_pid(const char *dir, const char *name);

struct json_object;

/**
 * Sends control command @ctlcmd (args consumed, may be NULL) to array
 * @name. On failure prints one line for @cmd and returns -1; on success
 * returns 0 with *@result (caller puts it; may be NULL) if @result.
 */
int clr_cli_ctl(const char *cmd, const char *dir, const char *name, const char *ctlcmd,
                struct json_object *args, int timeout_ms, struct json_object **result);

/** Looks up a dotted path ("sync_progress.position_bytes") in @o. */
struct json_object *clr_json_path(struct json_object *o, const char *path);

#endif
