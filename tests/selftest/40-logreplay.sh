#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The power-loss trials' replay tool (tests/progs/lmq-logreplay.c) and
# checker (tests/progs/lmq-plwriter.c), on the host, no guest: synthetic
# dm-log-writes logs (made here with perl, independently of the tool's
# parser) are listed and replayed to every kind of point, incrementally
# too, with 512- and 4096-byte sectors and a 64-bit sector number; broken
# logs (magic, version, sector size, flags, truncation) and impossible
# requests fail with their own exit status and a message naming the cause.
# The checker passes an intact directory and reports a reverted file.
. "$(dirname "$0")/lib.sh"
t=$st_tmp
lr=$t/lmq-logreplay pw=$t/lmq-plwriter
st_check "lmq-logreplay builds warning-free" bash -c \
	"cc -O2 -Wall -Wextra -Werror -o '$lr' '$top/tests/progs/lmq-logreplay.c'"
st_check "lmq-plwriter builds warning-free" bash -c \
	"cc -O2 -Wall -Wextra -Werror -o '$pw' '$top/tests/progs/lmq-plwriter.c'"

# mklog OUT SECTSZ [MAGIC VERSION NR]: a log from entry lines on stdin,
# "FLAGS SECTOR COUNT FILLCHAR" or "8 0 0 MARKNAME"; NR defaults to the
# number of lines.  Data: COUNT sectors of FILLCHAR.
mklog() {
	perl -e '
		my ($out, $ss, $magic, $ver, $nr) = @ARGV;
		my @e = map { [split] } grep { /\S/ } <STDIN>;
		$nr = scalar @e if $nr eq "";
		open(my $f, ">", $out) or die;
		binmode $f;
		my $sup = pack("Q<Q<Q<L<", hex($magic), $ver, $nr, $ss);
		print $f $sup . ("\0" x ($ss - length $sup));
		for my $x (@e) {
			my ($fl, $sec, $cnt, $arg) = @$x;
			my $mark = ($fl & 8) ? $arg : "";
			my $h = pack("Q<Q<Q<Q<", $sec, $cnt, $fl, length $mark) . $mark;
			print $f $h . ("\0" x ($ss - length $h));
			print $f ($arg x ($cnt * $ss)) unless $fl & 12;
		}' "$1" "$2" "${3:-6a736677736872}" "${4:-1}" "${5:-}"
}
# flags: 1 FLUSH, 2 FUA, 4 DISCARD, 8 MARK, 16 META
entries='0 0 2 A
0 4 1 B
1 0 0 -
18 8 1 C
8 0 0 m1
0 0 1 D
4 4 1 -
1 0 0 -
0 2 1 E
8 0 0 dm-log-writes-end'
mklog "$t/log" 512 <<<"$entries"
# img NAME SPEC...: a 16-sector image of Z, with SECTOR=CHAR overrides
img() {
	local n=$1 s
	shift
	perl -e 'my @s = ("Z") x 16; for (@ARGV) { my ($i, $c) = split /=/; $s[$i] = $c }
		print map { $_ eq "0" ? "\0" x 512 : $_ x 512 } @s' "$@" >"$t/$n"
}
fresh() { perl -e 'print "Z" x (16 * 512)' >"$t/tgt"; }
# replay_is DESC WANT-IMAGE WANT-LINE-ERE ARGS...: replay onto a fresh target
replay_is() {
	local d=$1 want=$2 ere=$3 out
	shift 3
	fresh
	out=$("$lr" replay "$@" "$t/log" "$t/tgt" 2>&1)
	cmp -s "$t/tgt" "$t/$want" && grep -qE "$ere" <<<"$out"
	st_ok $? "$d"
	echo "#   $out"
}
# fails DESC RC ERE CMD...: CMD exits RC and prints a line matching ERE
fails() {
	local d=$1 rc=$2 ere=$3 out got
	shift 3
	out=$("$@" 2>&1); got=$?
	[ "$got" = "$rc" ] && grep -qE "$ere" <<<"$out"
	st_ok $? "$d"
	printf '(exit %s) %s\n' "$got" "$out" | head -n 3 | sed 's/^/#   /'
}

out=$("$lr" list "$t/log")
printf '%s\n' "$out" | sed 's/^/#   /'
st_ok "$([ "$(grep -vc '^#' <<<"$out")" = 10 ] &&
	grep -qx '0 0 2 WRITE' <<<"$out" && grep -qx '2 0 0 FLUSH' <<<"$out" &&
	grep -qx '3 8 1 FUA|META' <<<"$out" && grep -qx '4 - 0 MARK m1' <<<"$out" &&
	grep -qx '6 4 1 DISCARD' <<<"$out" &&
	grep -qx '9 - 0 MARK dm-log-writes-end' <<<"$out" &&
	grep -q 'version 1, sector size 512, 10 entries' <<<"$out"; echo $?)" \
	"list: index, sector, count, flags and marks of every entry"
st_ok "$([ "$("$lr" list -s "$t/log" | grep -vc '^#')" = 5 ]; echo $?)" "list -s: only FLUSH, FUA and MARK entries"
st_ok "$([ "$("$lr" find "$t/log" m1)" = 4 ]; echo $?)" "find: the index of a mark"

img e1 0=A 1=A 4=B
img m1 0=A 1=A 4=B 8=C
img f2 0=A 1=A 4=B
img f7 0=D 1=A 4=0 8=C
img all 0=D 1=A 2=E 4=0 8=C
replay_is "replay -e 1: entries 0..1" e1 'first=0 last=1 writes=2 .*lastmark=- lastmark_entry=-1' -e 1
replay_is "replay -m m1: up to the mark, the FUA write in" m1 'last=4 writes=3 .*end=MARK lastmark=m1 lastmark_entry=4' -m m1
replay_is "replay -f 6: the last FLUSH at or before 6 is 2 (the FUA write and the rest dropped)" f2 'last=2 writes=2 .*end=FLUSH' -f 6
replay_is "replay -f 7: entry 7 is a FLUSH itself" f7 'last=7 writes=4 discards=1 .*end=FLUSH lastmark=m1' -f 7
replay_is "replay -a: every entry, a DISCARD as zeroes" all 'last=9 writes=5 discards=1 .*lastmark=dm-log-writes-end lastmark_entry=9' -a
fresh
"$lr" replay -m m1 "$t/log" "$t/tgt" >/dev/null &&
	o=$("$lr" replay -S 5 -a "$t/log" "$t/tgt") && cmp -s "$t/tgt" "$t/all"
st_ok $? "incremental: -m m1, then -S 5 -a, equals -a ($o)"
fresh
o=$("$lr" replay -f 1 "$t/log" "$t/tgt") && cmp -s "$t/tgt" <(perl -e 'print "Z" x 8192')
st_ok $? "-f before the first FLUSH: nothing replayed ($o)"

fails "-S 5 -f 6: the last flush is behind the start" 4 'last FLUSH at or before entry 6 is earlier' \
	"$lr" replay -S 5 -f 6 "$t/log" "$t/tgt"
fails "-e 3 with -S 6: a replay cannot go back" 4 'cannot go back' "$lr" replay -S 6 -e 3 "$t/log" "$t/tgt"
fails "no such mark" 4 'no mark "nope" in 10 entries' "$lr" replay -m nope "$t/log" "$t/tgt"
fails "an entry past the end" 4 'no entry 10 \(the log has 10 entries\)' "$lr" replay -e 10 "$t/log" "$t/tgt"
fails "bad number" 2 "'x1' is not an entry index" "$lr" replay -e x1 "$t/log" "$t/tgt"
fails "no target" 3 'cannot open the replay target' "$lr" replay -a "$t/log" "$t/nonexistent/tgt"
truncate -s 4096 "$t/small"
fails "a target too small for an entry" 3 'entry 3 at byte 3584 writes bytes 4096\.\.4607 but the replay target .* is 4096 bytes' \
	"$lr" replay -a "$t/log" "$t/small"
fails "no log" 3 'cannot open the log' "$lr" list "$t/nolog"

mklog "$t/bad" 512 1234 <<<"$entries"
fails "bad magic" 1 'super block: bad magic 0x1234 \(want 0x6a736677736872\)' "$lr" list "$t/bad"
mklog "$t/bad" 512 6a736677736872 2 <<<"$entries"
fails "bad version" 1 'super block: version 2, this tool knows version 1 only' "$lr" list "$t/bad"
mklog "$t/bad" 1000 <<<"$entries"
fails "bad sector size" 1 'sector size 1000 is not a power of two' "$lr" list "$t/bad"
mklog "$t/bad" 512 <<<"${entries/18 8 1 C/146 8 1 C}"
fails "unknown flag bit" 1 'entry 3 at byte 3584: unknown flags 0x92' "$lr" list "$t/bad"
mklog "$t/bad" 512 6a736677736872 1 12 <<<"$entries"
fails "more entries than the log holds" 1 'entry 10 at byte [0-9]+: needs bytes .*\(truncated log' "$lr" list "$t/bad"
mklog "$t/bad" 512 <<<"$entries"
truncate -s 5800 "$t/bad"
fails "a log cut inside an entry's data" 1 'entry 5 at byte 5120: 1 sectors of data, only 168 bytes of log left' "$lr" list "$t/bad"
mklog "$t/bad" 512 <<<"${entries/8 0 0 m1/9 0 0 m1}"
fails "a mark with another flag" 1 'entry 4 at byte [0-9]+: a mark with flags 0x9' "$lr" list "$t/bad"
truncate -s 100 "$t/bad"
fails "a log shorter than a super block" 1 'super block: needs bytes 0\.\.511 but the log is 100 bytes' "$lr" list "$t/bad"

# 4096-byte sectors: sector numbers and counts are in that unit
mklog "$t/log4k" 4096 <<<'0 3 1 Q
1 0 0 -
0 1 2 R'
truncate -s 32K "$t/tgt4k"
"$lr" replay -f 2 "$t/log4k" "$t/tgt4k" >/dev/null &&
	[ "$(dd if="$t/tgt4k" bs=4096 skip=3 count=1 status=none | tr -d Q | wc -c)" = 0 ] &&
	[ "$(tr -d '\0' <"$t/tgt4k" | wc -c)" = 4096 ]
st_ok $? "4096-byte sectors: entry at sector 3 lands at byte 12288, unflushed writes dropped"
# a sector number above 2^32: 64-bit little-endian
mklog "$t/log64" 512 <<<'0 4294967301 1 W
1 0 0 -'
truncate -s 3T "$t/tgt64" 2>/dev/null
if [ -f "$t/tgt64" ]; then
	"$lr" replay -a "$t/log64" "$t/tgt64" >/dev/null &&
		[ "$(dd if="$t/tgt64" bs=512 skip=4294967301 count=1 status=none | tr -d W | wc -c)" = 0 ]
	st_ok $? "a sector above 2^32 lands at byte $((4294967301 * 512))"
	rm -f "$t/tgt64"
fi

# the checker: a finished run checks clean; the same seed stopped earlier
# passes at an early mark and loses the writes acknowledged after it
mkdir -p "$t/a" "$t/b"
"$pw" write -s 42 -n 120 -d "$t/a" -l "$t/a.log" >/dev/null &&
	"$pw" write -s 42 -n 40 -d "$t/b" -l "$t/b.log" >/dev/null
# quiet CMD...: CMD's output as comments, its status
quiet() { local rc; "$@" >"$t/out" 2>&1; rc=$?; sed 's/^/#   /' "$t/out"; return $rc; }
st_check "checker: the final state of a run" quiet "$pw" check -F -d "$t/a" -l "$t/a.log"
early=$(grep '^M ' "$t/b.log" | tail -n 1 | cut -d' ' -f2)
late=$(grep '^M ' "$t/a.log" | tail -n 1 | cut -d' ' -f2)
st_check "checker: a run stopped after 40 operations, at its last mark $early" \
	quiet "$pw" check -M "$early" -d "$t/b" -l "$t/a.log"
fails "checker: the same run at $late loses acknowledged writes" 1 'LOST file f[0-9] block [0-9]+ sector [0-9]: want seq >= [0-9]+ \(durable\), found (stale seq|zeroes|past end)' \
	"$pw" check -M "$late" -d "$t/b" -l "$t/a.log"
rm "$t/b/f1"
fails "checker: a file whose creation was fsynced is missing" 1 'LOST file f1: missing' \
	"$pw" check -M pl-0 -d "$t/b" -l "$t/a.log"
st_done
