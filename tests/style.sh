#!/bin/sh
# make check: every C source and header is formatted as .clang-format says
# (`make format` fixes it).  Skipped (77) without clang-format 14, the
# version the style was written for: another version formats differently.
set -eu
top=${top_srcdir:-.}
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
	echo "SKIP: clang-format not installed (apt-get install clang-format)"
	exit 77
fi
case $("$cf" --version) in
*" version 14."*) ;;
*) echo "SKIP: $("$cf" --version) is not clang-format 14"; exit 77 ;;
esac
cd "$top"
files=$(find engine tests agent -name '*.[ch]' -not -path '*/corpus/*' 2>/dev/null | sort)
bad=0
for f in $files; do
	if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (run: make format)"
		bad=1
	fi
done
[ "$bad" = 0 ] || exit 1
echo "$(echo "$files" | wc -l) files formatted as .clang-format says"
