#!/bin/sh
# live-cluster3.sh's scenarios 7-16, clraid-policyd's decisions on three
# Pacemaker nodes (issue 15's cases), as a test of their own: see that
# file.  15 first: the path errors of 7-14 stay in every node's evidence.
LIVE3_SCENARIOS=${LIVE3_SCENARIOS:-15 7 13 10 11 12 8 14 9 16}
export LIVE3_SCENARIOS
exec bash "${top_srcdir:-.}/tests/pacemaker/live-cluster3.sh" "$@"
