/* Unit tests of the control protocol codec (engine/ctl/ctl_proto.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/ctl_proto.h"

static int decode(const char *s, struct clr_ctl_request *r, struct clr_err *e)
{
    return clr_ctl_request_decode(s, strlen(s), r, e);
}

static void test_status_ok(void **state)
{
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_int_equal(decode("{\"v\":1,\"cmd\":\"status\"}", &r, &e), 0);
    assert_int_equal(r.cmd, CLR_CTL_STATUS);
    assert_null(r.device);
    clr_ctl_request_free(&r);
    /* Whitespace and a CR around the object are fine; args may be null. */
    assert_int_equal(decode("  {\"v\":1,\"cmd\":\"status\",\"args\":null}\r", &r, &e), 0);
    clr_ctl_request_free(&r);
}

static void test_every_command_name_round_trips(void **state)
{
    for (unsigned i = 0; i < CLR_CTL_NCMDS; i++) {
        enum clr_ctl_cmd c;

        assert_int_equal(clr_ctl_cmd_lookup(clr_ctl_cmd_name((enum clr_ctl_cmd)i), &c), 0);
        assert_int_equal(c, i);
    }
    enum clr_ctl_cmd c;
    assert_int_equal(clr_ctl_cmd_lookup("readd", &c), -EINVAL);
}

static void test_policy_command(void **state)
{
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":15000,\"lease_ms\":3000,\"hold\":true}}",
               &r, &e),
        0);
    assert_int_equal(r.cmd, CLR_CTL_POLICY);
    assert_int_equal(r.confirm_ms, 15000);
    assert_int_equal(r.lease_ms, 3000);
    assert_true(r.hold);
    clr_ctl_request_free(&r);
    /* detach: confirm_ms 0, no lease, no hold */
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":0}}", &r, &e), 0);
    assert_int_equal(r.confirm_ms, 0);
    assert_false(r.hold);
    clr_ctl_request_free(&r);
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"policy\"}", &r, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "confirm_ms"));
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":-1}}", &r, &e), -ERANGE);
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":5,\"hold\":1}}", &r, &e),
                     -EINVAL);
    assert_non_null(strstr(e.msg, "hold"));
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":5,\"lease_ms\":5,"
                            "\"decision\":\"row 2 fail-disk\",\"pending\":null}}",
                            &r, &e),
                     0);
    assert_string_equal(r.decision, "row 2 fail-disk");
    assert_null(r.pending);
    clr_ctl_request_free(&r);
    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"policy\",\"args\":{\"confirm_ms\":5,\"decision\":7}}", &r, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "decision"));
}

static void test_device_commands(void **state)
{
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_int_equal(decode("{\"v\":1,\"cmd\":\"re-add\",\"args\":{\"device\":\"/dev/sdb\"}}", &r, &e), 0);
    assert_int_equal(r.cmd, CLR_CTL_READD);
    assert_string_equal(r.device, "/dev/sdb");
    clr_ctl_request_free(&r);

    assert_int_equal(decode("{\"v\":1,\"cmd\":\"fail\"}", &r, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "args.device"));
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"add\",\"args\":{\"device\":7}}", &r, &e), -EINVAL);
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"add\",\"args\":{\"device\":\"\"}}", &r, &e), -EINVAL);
}

static void test_fault(void **state)
{
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_int_equal(decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"write\","
                            "\"offset\":4096,\"length\":65536,\"errno\":5}}",
                            &r, &e),
                     0);
    assert_int_equal(r.fault_op, CLR_CTL_FAULT_WRITE);
    assert_int_equal(r.offset, 4096);
    assert_int_equal(r.length, 65536);
    assert_int_equal(r.err, 5);
    clr_ctl_request_free(&r);

    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"delay\",\"ms\":20}}", &r,
               &e),
        0);
    assert_int_equal(r.fault_op, CLR_CTL_FAULT_DELAY);
    assert_int_equal(r.ms, 20);
    clr_ctl_request_free(&r);

    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"delay\"}}", &r, &e),
        -EINVAL);
    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"melt\"}}", &r, &e), -EINVAL);
    /* a latent sector error needs a range */
    assert_int_equal(
        decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"bad-sector\"}}", &r, &e),
        -EINVAL);
    assert_string_equal(e.msg, "fault bad-sector: args.length (bytes, > 0) is required");
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"bad-sector\","
                            "\"offset\":8192,\"length\":4096}}",
                            &r, &e),
                     0);
    assert_int_equal(r.fault_op, CLR_CTL_FAULT_BAD_SECTOR);
    assert_int_equal(r.length, 4096);
    clr_ctl_request_free(&r);
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"read\","
                            "\"offset\":-1}}",
                            &r, &e),
                     -ERANGE);
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"fault\",\"args\":{\"device\":\"/d1\",\"op\":\"read\","
                            "\"length\":\"big\"}}",
                            &r, &e),
                     -EINVAL);
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "",
        "garbage",
        "{",
        "[]",
        "42",
        "\"status\"",
        "{\"cmd\":\"status\"}",
        "{\"v\":\"1\",\"cmd\":\"status\"}",
        "{\"v\":1}",
        "{\"v\":1,\"cmd\":7}",
        "{\"v\":1,\"cmd\":\"status\"} {\"v\":1,\"cmd\":\"status\"}",
        "{\"v\":1,\"cmd\":\"status\"}x",
        "{\"v\":1,\"cmd\":\"status\",\"args\":[1]}",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    struct clr_ctl_request r;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct clr_err e = { "" };

        assert_int_not_equal(decode(bad[i], &r, &e), 0);
        assert_true(e.msg[0] != '\0');
        assert_null(strchr(e.msg, '\n'));
        assert_null(r.obj);
    }
    /* An embedded NUL is refused, not truncated. */
    struct clr_err e = { "" };
    assert_int_equal(clr_ctl_request_decode("{\"v\":1,\"cmd\":\"status\"}\0x", 25, &r, &e), -EINVAL);
}

static void test_version_and_unknown(void **state)
{
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_int_equal(decode("{\"v\":2,\"cmd\":\"status\"}", &r, &e), -EPROTONOSUPPORT);
    assert_non_null(strstr(e.msg, "version 2"));
    assert_int_equal(decode("{\"v\":1,\"cmd\":\"explode\"}", &r, &e), -EOPNOTSUPP);
    assert_non_null(strstr(e.msg, "explode"));
}

static void test_oversized(void **state)
{
    size_t n = CLR_CTL_MAX_LINE + 10;
    char *big = malloc(n);
    struct clr_ctl_request r;
    struct clr_err e = { "" };

    assert_non_null(big);
    memset(big, ' ', n);
    assert_int_equal(clr_ctl_request_decode(big, n, &r, &e), -EMSGSIZE);
    free(big);
}

static void test_reply_encode_decode(void **state)
{
    json_object *res = json_object_new_object(), *back = NULL;
    struct clr_err e = { "" };
    char *line;

    json_object_object_add(res, "state", json_object_new_string("clean"));
    line = clr_ctl_reply_ok(res);
    assert_non_null(line);
    assert_int_equal(line[strlen(line) - 1], '\n');
    assert_null(memchr(line, '\n', strlen(line) - 1));
    assert_int_equal(clr_ctl_reply_decode(line, strlen(line), &back, &e), 0);
    assert_string_equal(json_object_get_string(json_object_object_get(back, "state")), "clean");
    json_object_put(back);
    free(line);

    line = clr_ctl_reply_ok(NULL);
    assert_int_equal(clr_ctl_reply_decode(line, strlen(line), &back, &e), 0);
    assert_null(back);
    free(line);

    /* Errors are flattened to one line. */
    line = clr_ctl_reply_error("first\nsecond");
    assert_null(memchr(line, '\n', strlen(line) - 1));
    assert_int_equal(clr_ctl_reply_decode(line, strlen(line), &back, &e), -EREMOTEIO);
    assert_string_equal(e.msg, "first second");
    free(line);

    assert_int_equal(clr_ctl_reply_decode("{\"v\":1}", 7, &back, &e), -EPROTO);
    assert_int_equal(clr_ctl_reply_decode("nope", 4, &back, &e), -EPROTO);
    assert_int_equal(clr_ctl_reply_decode("{\"v\":9,\"ok\":true}", 17, &back, &e), -EPROTO);
}

static void test_request_encode(void **state)
{
    json_object *args = json_object_new_object();
    struct clr_ctl_request r;
    struct clr_err e = { "" };
    char *line;

    json_object_object_add(args, "device", json_object_new_string("/var/tmp/x/d0"));
    line = clr_ctl_request_encode("remove", args);
    assert_non_null(line);
    assert_non_null(strstr(line, "/var/tmp/x/d0")); /* slashes not escaped */
    assert_int_equal(clr_ctl_request_decode(line, strlen(line), &r, &e), 0);
    assert_int_equal(r.cmd, CLR_CTL_REMOVE);
    assert_string_equal(r.device, "/var/tmp/x/d0");
    clr_ctl_request_free(&r);
    free(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_ok),
        cmocka_unit_test(test_every_command_name_round_trips),
        cmocka_unit_test(test_device_commands),
        cmocka_unit_test(test_policy_command),
        cmocka_unit_test(test_fault),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_version_and_unknown),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_reply_encode_decode),
        cmocka_unit_test(test_request_encode),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
