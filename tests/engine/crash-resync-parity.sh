#!/bin/sh
# crash-resync.sh on the parity levels.
CRASH_LEVELS="5 6"
export CRASH_LEVELS
exec /bin/sh "${top_srcdir:-.}/tests/engine/crash-resync.sh"
