#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 43-loopmqctl-stats: loopmqctl's modes and statistics against the driver's
# own view (sysfs loopmq/mode and loopmq/stats): --mode at attach and live,
# --stats (table and JSON) equal to the sysfs counters, the -l stats
# columns equal to --stats, --reset-stats zeroes them, and the counters
# move on the path each mode promises (kthread mode: only kthread; direct:
# inline, kthread only for counted fallbacks; aio: never inline).  After
# the counters --stats shows the direct-I/O state, sysfs loopmq/dio_auto
# (direct_io for its setting, dio_KEY for the rest).
# loopmq only (skipped on the stock loop driver, which has no modes).
DESCRIPTION="loopmqctl's modes and statistics against sysfs"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
	lmq_is_mq || skip_all "the stock loop driver has no modes or statistics"
	require_cmd jq
}
. /tests/lib/guest.sh

W=/tmp/t43
mkdir -p $W
cleanup() { lmq_detach_all; umount /mnt/t43 2>/dev/null; rm -rf $W; }
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }

F=$W/a.img
head -c 8M /dev/urandom >$F
# counters of DEV: "name value" lines as sysfs has them, from the tool
tool_stats() {
	"$LOOPMQCTL" --stats -n --raw "$1" |
		awk -v d="$1" '$1 == d && $2 != "mode" && $2 !~ /^(direct_io|dio_)/ { print $2, $3 }'
}
jstat() { "$LOOPMQCTL" --stats -J "$1" | jq -r ".loopdevices[0] | $2"; }
NREQ=64
io() { dd if="$1" of=/dev/null bs=4k count=$NREQ iflag=direct status=none; }

for m in direct kthread aio auto; do
	D=$("$LOOPMQCTL" -f --show --mode $m $F) || { fail "attach --mode $m"; continue; }
	is "$(sysv $D loopmq/mode)" $m "$m: sysfs mode after --mode $m"
	check "$m: --reset-stats" "$LOOPMQCTL" --reset-stats $D
	is "$(awk '{ s += $2 } END { print s + 0 }' /sys/block/${D##*/}/loopmq/stats)" 0 \
		"$m: sysfs counters are all 0 after --reset-stats"
	io $D
	sys=$(cat /sys/block/${D##*/}/loopmq/stats)
	same_out=$(tool_stats $D)
	if [ "$same_out" = "$sys" ]; then pass "$m: --stats equals sysfs loopmq/stats"; else
		fail "$m: --stats equals sysfs loopmq/stats" "tool: $(echo $same_out) / sysfs: $(echo $sys)"
	fi
	j=$("$LOOPMQCTL" --stats -J $D)
	check "$m: --stats -J is valid JSON" jq -e . <<<"$j"
	is "$(jq -r '.loopdevices[0].name' <<<"$j")" "$D" "$m: JSON name"
	is "$(jq -r '.loopdevices[0].mode' <<<"$j")" "$m" "$m: JSON mode"
	# the driver's own names, in its order: sysfs lists the paths first,
	# then fb_<reason> for each fallback, then three more counters
	is "$(jq -r '.loopdevices[0].paths | keys_unsorted | join(",")' <<<"$j")" \
		"$(echo "$sys" | awk '$1 !~ /^(fb_|kthread_wakeups$|peak_inflight$|errors$)/ { printf "%s%s", s, $1; s = "," }')" \
		"$m: JSON paths are sysfs's"
	is "$(jq -r '.loopdevices[0].fallbacks | keys_unsorted | join(",")' <<<"$j")" \
		"$(echo "$sys" | awk '$1 ~ /^fb_/ { printf "%s%s", s, substr($1, 4); s = "," }')" \
		"$m: JSON fallbacks are sysfs's"
	read -r inl ain aas kth fbs err <<<"$(jq -r '.loopdevices[0] | [.paths.inline,
		.paths.aio_inline, .paths.aio_async, .paths.kthread,
		([.fallbacks[]] | add), .errors] | map(tostring) | join(" ")' <<<"$j")"
	diag "$m after $NREQ direct 4k reads: inline=$inl aio_inline=$ain aio_async=$aas kthread=$kth fallbacks=$fbs"
	total=$((inl + ain + aas + kth))
	[ $total -ge $NREQ ] && pass "$m: every request counted on a path ($total >= $NREQ)" ||
		fail "$m: every request counted on a path" "$total < $NREQ"
	is "$err" 0 "$m: no errors"
	is "$("$LOOPMQCTL" -l -n --raw -O INLINE,AIO-INLINE,AIO-ASYNC,KTHREAD,FALLBACKS $D)" \
		"$inl $ain $aas $kth $fbs" "$m: -l stats columns equal --stats"
	case $m in
	kthread)
		is "$inl/$ain/$aas" 0/0/0 "kthread: nothing inline or aio"
		[ $kth -ge $NREQ ] && pass "kthread: all on the kthread ($kth)" ||
			fail "kthread: all on the kthread" "kthread=$kth";;
	direct)
		# dd's reads reach queue_rq in dd itself: only a worker takes aio
		is "$ain/$aas" 0/0 "direct: no aio for reads from the submitter"
		is "$kth" "$fbs" "direct: the kthread ran only counted fallbacks"
		[ $inl -gt 0 ] && pass "direct: reads ran inline ($inl)" || fail "direct: reads ran inline" "inline=0";;
	aio)
		is "$inl" 0 "aio: nothing inline"
		is "$kth" "$fbs" "aio: the kthread ran only counted fallbacks";;
	esac
	check "$m: --reset-stats again" "$LOOPMQCTL" --reset-stats $D
	is "$(tool_stats $D | awk '{ s += $2 } END { print s + 0 }')" 0 "$m: the tool reads zeros"
	"$LOOPMQCTL" -d $D
done

# live switch, and the tool reads the driver's state, not its own idea
D=$("$LOOPMQCTL" -f --show --mode kthread $F)
echo aio >/sys/block/${D##*/}/loopmq/mode
is "$("$LOOPMQCTL" -l -n -O MODE $D)" aio "-l shows a mode set through sysfs"
is "$(jstat $D .mode)" aio "--stats shows a mode set through sysfs"
check "live --mode direct" "$LOOPMQCTL" --mode direct $D
is "$(sysv $D loopmq/mode)" direct "live --mode direct reached sysfs"
"$LOOPMQCTL" --reset-stats $D
io $D
k=$(jstat $D .paths.kthread) f=$(jstat $D '[.fallbacks[]] | add')
is "$k" "$f" "after the live switch to direct: kthread only for fallbacks"
check "live --mode kthread" "$LOOPMQCTL" --mode kthread $D
"$LOOPMQCTL" --reset-stats $D
io $D
[ "$(jstat $D .paths.kthread)" -ge $NREQ ] && pass "after the live switch to kthread: all on the kthread" ||
	fail "after the live switch to kthread: all on the kthread" "$(jstat $D .paths)"
check "--reset-stats via sysfs write" sh -c "echo 0 >/sys/block/${D##*/}/loopmq/stats"
is "$(jstat $D '[.paths[]] | add')" 0 "sysfs reset seen by the tool"

# aio with direct I/O to a file on ext4: the aio paths are non-zero, and the
# tool still reports exactly what sysfs does
mkdir -p /mnt/t43
if mkfs.ext4 -q -F /dev/vda >/dev/null 2>&1 && mount /dev/vda /mnt/t43; then
	G=/mnt/t43/d.img
	head -c 8M /dev/urandom >$G
	# clean page cache: NOWAIT direct I/O over dirty pages says EAGAIN
	sync
	echo 3 >/proc/sys/vm/drop_caches
	E=$("$LOOPMQCTL" -f --show --direct-io --mode aio $G)
	is "$(sysv $E loop/dio)/$(sysv $E loopmq/mode)" "1/aio" "ext4 file attached with dio in aio mode"
	"$LOOPMQCTL" --reset-stats $E
	# twice: NOWAIT reads answer EAGAIN (-> kthread) until a blocking read
	# has loaded ext4's extent status cache for the range
	io $E
	io $E
	dd if=/dev/zero of=$E bs=4k count=$NREQ oflag=direct status=none
	a=$(jstat $E '.paths.aio_inline + .paths.aio_async')
	[ "$a" -gt 0 ] && pass "dio + aio: requests took an aio path ($a)" ||
		fail "dio + aio: requests took an aio path" "$(jstat $E '{paths, fallbacks} | tostring')"
	is "$(tool_stats $E)" "$(cat /sys/block/${E##*/}/loopmq/stats)" "dio + aio: --stats equals sysfs"
	is "$("$LOOPMQCTL" -l -n --raw -O AIO-INLINE,AIO-ASYNC $E)" "$(jstat $E '"\(.paths.aio_inline) \(.paths.aio_async)"')" \
		"dio + aio: -l AIO columns equal --stats"
	"$LOOPMQCTL" -d $E
	umount /mnt/t43
else
	skip "dio + aio" "cannot make ext4 on /dev/vda"
fi

# --stats without a device: every bound device
D2=$("$LOOPMQCTL" -f --show $F)
is "$("$LOOPMQCTL" --stats -n | awk '{ print $1 }' | sort -u | tr '\n' ' ')" "$(printf '%s\n' $D $D2 | sort | tr '\n' ' ')" \
	"--stats without a device covers every bound device"
is "$("$LOOPMQCTL" --stats -J | jq '.loopdevices | length')" 2 "--stats -J without a device: two entries"

# the output formats, exactly, built here from sysfs: the table (DEVICE
# COUNTER VALUE, two blanks between columns, DEVICE as wide as the longest
# name, COUNTER as the longest counter), --raw, -n, and the JSON text with
# its field names and layout; one table line per device and counter, one
# JSON object per device, in the order given
"$LOOPMQCTL" --reset-stats $D $D2
io $D
# loopmq/dio_auto of DEV as --stats names it: setting is direct_io, the
# other keys get dio_ in front
dio_lines() { awk '{ print ($1 == "setting" ? "direct_io" : "dio_" $1), $2 }' /sys/block/${1##*/}/loopmq/dio_auto; }
# "dev counter value" lines as --stats shows them: mode first, then
# sysfs's counters, then the direct-I/O state
counters() {
	local d
	for d; do
		echo "$d mode $(sysv $d loopmq/mode)"
		sed "s|^|$d |" /sys/block/${d##*/}/loopmq/stats
		dio_lines $d | sed "s|^|$d |"
	done
}
want_table() {
	local w=6 c=7 d n v
	for d in $D $D2; do [ ${#d} -gt $w ] && w=${#d}; done
	while read -r d n v; do [ ${#n} -gt $c ] && c=${#n}; done < <(counters $D $D2)
	printf '%-*s  %-*s  %s\n' $w DEVICE $c COUNTER VALUE
	counters $D $D2 | while read -r d n v; do printf '%-*s  %-*s  %s\n' $w $d $c $n $v; done
}
want_json() {
	local d i=0
	printf '{\n   "loopdevices": [\n'
	for d in $D $D2; do
		i=$((i + 1))
		printf '      {\n         "name": "%s",\n         "mode": "%s",\n' $d "$(sysv $d loopmq/mode)"
		{ cat /sys/block/${d##*/}/loopmq/stats; dio_lines $d; } |
		awk '$1 ~ /^fb_/ { f = f s2 "\"" substr($1, 4) "\": " $2; s2 = ", "; next }
			$1 ~ /^(kthread_wakeups|peak_inflight|errors)$/ { t = t ",\n         \"" $1 "\": " $2; next }
			$1 ~ /^(direct_io|dio_chosen|dio_reason)$/ { t = t ",\n         \"" $1 "\": \"" $2 "\""; next }
			$1 ~ /^dio_/ { t = t ",\n         \"" $1 "\": " $2; next }
			{ p = p s1 "\"" $1 "\": " $2; s1 = ", " }
			END { printf "         \"paths\": {%s},\n         \"fallbacks\": {%s}%s\n", p, f, t }'
		printf '      }%s\n' "$([ $i -lt 2 ] && echo ,)"
	done
	printf '   ]\n}\n'
}
same_text() {
	if [ "$1" = "$2" ]; then pass "$3"; else
		fail "$3" "output differs"
		diff <(printf '%s\n' "$2") <(printf '%s\n' "$1") | head -n 20 | sed 's/^/#   /'
	fi
}
same_text "$("$LOOPMQCTL" --stats $D $D2)" "$(want_table)" "--stats table, exactly"
same_text "$("$LOOPMQCTL" --stats -n $D $D2)" "$(want_table | tail -n +2)" "--stats -n: the table without its header"
same_text "$("$LOOPMQCTL" --stats --raw $D $D2)" "$(echo DEVICE COUNTER VALUE; counters $D $D2)" \
	"--stats --raw: one blank between columns, with the header"
same_text "$("$LOOPMQCTL" --stats -J $D $D2)" "$(want_json)" "--stats -J text, exactly"
is "$("$LOOPMQCTL" --stats $D $D2 | wc -l)" $((1 + 2 * $(counters $D | wc -l))) \
	"--stats: a header and a line per device and counter"
j=$("$LOOPMQCTL" --stats -J $D $D2)
keys=name,mode,paths,fallbacks,kthread_wakeups,peak_inflight,errors
keys=$keys,direct_io,dio_chosen,dio_reason,dio_holes_permille,dio_unwritten_permille
keys=$keys,dio_shared_permille,dio_costly_permille,dio_block_size,dio_switches
keys=$keys,dio_write_costly_permille
is "$(jq -r '[keys_unsorted[]] + [.loopdevices[] | keys_unsorted | join(",")] | join(" ")' <<<"$j")" \
	"loopdevices $keys $keys" \
	"--stats -J: the top-level key and the field names, one object per device"
is "$(jq -r '[.loopdevices[] | [.direct_io, .dio_chosen, .dio_reason] | join(":")] | join(" ")' <<<"$j")" \
	"$(echo $(for d in $D $D2; do dio_lines $d | awk '$1 ~ /^(direct_io|dio_chosen|dio_reason)$/ { printf "%s%s", s, $2; s = ":" } END { print "" }'; done))" \
	"--stats -J: direct_io, dio_chosen, dio_reason as sysfs loopmq/dio_auto"
is "$(jq -r '[.loopdevices[] | .name, (.mode | type), ([.paths[], .fallbacks[], .kthread_wakeups, .peak_inflight, .errors] | map(type) | unique[])] | join(" ")' <<<"$j")" \
	"$D string number $D2 string number" "--stats -J: names in the order given, mode a string, counters numbers"
run "$LOOPMQCTL" --stats -O NAME $D
is "$rc:$out:$err" "1::loopmqctl: option --output is only allowed with --list
Try 'loopmqctl --help' for more information." "--stats -O is refused"
run "$LOOPMQCTL" --stats /dev/${LMQ_NAME}999 $D
is "$rc:$(wc -l <<<"$out"):$err" "1:$((1 + $(counters $D | wc -l))):loopmqctl: /dev/${LMQ_NAME}999: cannot open device: No such file or directory" \
	"--stats with a missing device: reports it, lists the others, exit 1"
"$LOOPMQCTL" -d $D2
"$LOOPMQCTL" -d $D

done_testing
