#!/bin/sh
# fail-under-load.sh, then the failed members come back with re-add and
# only the regions written while they were out are resynced.
READD=1
export READD
exec /bin/sh "${top_srcdir:-.}/tests/engine/fail-under-load.sh"
