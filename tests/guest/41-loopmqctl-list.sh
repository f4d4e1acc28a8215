#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 41-loopmqctl-list: loopmqctl lists exactly what util-linux losetup lists.
# (a) On the stock loop driver (through the tool's test-only
#     LOOPMQCTL_PREFIX=loop) the two tools print the same -l table, --raw,
#     -n, -J (every shared column), -a, -j and one-device lines for the same
#     devices, and an attach made by either tool gives the same state.
# (b) With loopmq: the same attach made by losetup on /dev/loopN and by
#     loopmqctl on /dev/loopmqM lists identically on every shared column;
#     util-linux losetup reads a loopmq device like loopmqctl does.
# (c) Output formats: no devices -> nothing; JSON types; -O, +COL,
#     --output-all, lower-case column names, escapes.
DESCRIPTION="loopmqctl lists exactly what util-linux losetup lists"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
	[ -n "$LOSETUP" ] || skip_all "no util-linux losetup"
	lmq_needs_stock_loop
	require_cmd jq
}
. /tests/lib/guest.sh

W=/tmp/t41
mkdir -p $W
cleanup() {
	lmq_detach_all
	for d in /sys/block/loop[0-9]*; do
		[ -e "$d/loop/backing_file" ] && "$LOSETUP" -d "/dev/${d##*/}" 2>/dev/null
	done
	rm -rf $W
}
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }
lmq_is_mq && { modprobe loop || skip_all "cannot load the stock loop driver"; }
for _ in $(seq 50); do [ -c /dev/loop-control ] && break; sleep 0.1; done
LT() { LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" "$@"; }
SHARED=NAME,AUTOCLEAR,BACK-FILE,BACK-INO,BACK-MAJ:MIN,MAJ:MIN,OFFSET,PARTSCAN,RO,SIZELIMIT,DIO,LOG-SEC
STATE=AUTOCLEAR,BACK-FILE,BACK-INO,BACK-MAJ:MIN,OFFSET,PARTSCAN,RO,SIZELIMIT,DIO,LOG-SEC
LDEF=NAME,SIZELIMIT,OFFSET,AUTOCLEAR,RO,BACK-FILE,DIO,LOG-SEC
# util-linux 2.38 pads MAJ:MIN strings in JSON ("  7:0  "); compare trimmed.
# It prints MAJ:MIN only for major 7 (null for loopmq's dynamic major), so
# on loopmq devices the two tools are compared on NAME + STATE.
TRIM='.loopdevices |= map(with_entries(if (.value | type) == "string" then .value |= gsub("^ +| +$"; "") else . end))'
jnorm() { jq -S "$TRIM" 2>&1; }
# same A B DESC: equal, else show a diff
same() {
	if [ "$1" = "$2" ]; then pass "$3"; else
		fail "$3" "outputs differ"
		diff <(printf '%s\n' "$1") <(printf '%s\n' "$2") | head -n 20 | sed 's/^/#   /'
	fi
}
stock_bound() {
	local d
	for d in /sys/block/loop[0-9]*; do [ -e "$d/loop/backing_file" ] && echo "/dev/${d##*/}"; done
}

F=$W/a.img
truncate -s 16M $F
cp --sparse=always $F "$W/with space.img"

# --- (c) nothing bound ------------------------------------------------------
run "$LOOPMQCTL"
is "$rc:$out" "0:" "no devices: no output at all, exit 0"
run "$LOOPMQCTL" -l
is "$rc:$out" "0:" "no devices: -l prints nothing"
run "$LOOPMQCTL" -a
is "$rc:$out" "0:" "no devices: -a prints nothing"
run "$LOOPMQCTL" -l -J
is "$rc:$(jq '.loopdevices | length' <<<"$out")" "0:0" "no devices: -l -J is an empty loopdevices array"

# --- (a) the stock driver, both tools ---------------------------------------
OPTS=("" "-o 4096 --sizelimit 1M -r" "-b 4096 -P" "--sizelimit 512")
for o in "${OPTS[@]}"; do
	# shellcheck disable=SC2086
	DL=$("$LOSETUP" -f --show $o $F) || { fail "losetup -f --show $o"; continue; }
	tag="losetup ${o:-(no options)} -> $DL"
	same "$(LT -l -J -O $SHARED $DL | jnorm)" "$("$LOSETUP" -l -J -O $SHARED $DL | jnorm)" \
		"$tag: -l -J identical on every shared column"
	same "$(LT -l -O $LDEF $DL)" "$("$LOSETUP" -l $DL)" "$tag: -l table identical"
	same "$(LT -l --raw -O $LDEF $DL)" "$("$LOSETUP" -l --raw $DL)" "$tag: --raw identical"
	same "$(LT -l -n -O $LDEF $DL)" "$("$LOSETUP" -l -n $DL)" "$tag: -n identical"
	same "$(LT -l -O BACK-INO,PARTSCAN,LOG-SEC $DL)" "$("$LOSETUP" -l -O BACK-INO,PARTSCAN,LOG-SEC $DL)" \
		"$tag: -O BACK-INO,PARTSCAN,LOG-SEC table identical"
	same "$(LT $DL)" "$("$LOSETUP" $DL)" "$tag: one-device line identical"
	# the same attach by loopmqctl gives the same state
	# shellcheck disable=SC2086
	DT=$(LT -f --show $o $F) || { fail "loopmqctl -f --show $o (stock driver)"; continue; }
	same "$("$LOSETUP" -l -J -O $STATE $DT | jnorm)" "$("$LOSETUP" -l -J -O $STATE $DL | jnorm)" \
		"$tag: loopmqctl's attach ($DT) has the same state"
done
same "$(LT -a)" "$("$LOSETUP" -a)" "-a identical ($(stock_bound | wc -l) devices)"
same "$(LT -l -O $LDEF)" "$("$LOSETUP" -l)" "-l of all devices identical"
same "$(LT -l -J -O $LDEF | jnorm)" "$("$LOSETUP" -l -J | jnorm)" "-l -J of all devices identical"
same "$(LT -j $F)" "$("$LOSETUP" -j $F)" "-j FILE identical"
same "$(LT -j $F -o 4096)" "$("$LOSETUP" -j $F -o 4096)" "-j FILE -o 4096 identical"
is "$(LT -j $F -o 4096 | wc -l)" 2 "-j FILE -o 4096 finds the two devices with that offset"
DL=$("$LOSETUP" -f --show "$W/with space.img")
same "$(LT -l --raw -O $LDEF $DL)" "$("$LOSETUP" -l --raw $DL)" "--raw escapes a blank like losetup"
like "$(LT -l --raw -n -O BACK-FILE $DL)" 'with\\x20space' "--raw: blank as \\x20"
is "$(LT -l -J -O BACK-FILE $DL | jq -r '.loopdevices[0]["back-file"]')" "$W/with space.img" \
	"-J keeps the blank"
for d in $(stock_bound); do "$LOSETUP" -d $d; done

# --- (b) loopmq against the stock driver ------------------------------------
if lmq_is_mq; then
	for o in "${OPTS[@]}"; do
		# shellcheck disable=SC2086
		DL=$("$LOSETUP" -f --show $o $F) || { fail "losetup -f --show $o"; continue; }
		# shellcheck disable=SC2086
		DM=$("$LOOPMQCTL" -f --show $o $F) || { fail "loopmqctl -f --show $o"; continue; }
		tag="${o:-(no options)}: $DL by losetup, $DM by loopmqctl"
		same "$("$LOOPMQCTL" -l -J -O $STATE $DM | jnorm)" "$("$LOSETUP" -l -J -O $STATE $DL | jnorm)" \
			"$tag: identical on every shared column"
		run "$LOSETUP" -l -J -O NAME,$STATE $DM
		if [ $rc -eq 0 ]; then
			same "$("$LOOPMQCTL" -l -J -O NAME,$STATE $DM | jnorm)" "$(jnorm <<<"$out")" \
				"$tag: util-linux losetup reads $DM like loopmqctl"
		else
			fail "$tag: util-linux losetup reads $DM" "$err"
		fi
		"$LOOPMQCTL" -d $DM
		"$LOSETUP" -d $DL
	done
	# an attach by util-linux losetup on a loopmq device
	DM=$("$LOOPMQCTL" -f)
	run "$LOSETUP" -o 8192 $DM $F
	if [ $rc -eq 0 ]; then
		pass "util-linux losetup attaches $DM"
		is "$("$LOOPMQCTL" -l -n -O BACK-FILE,OFFSET $DM | tr -s ' ')" "$F 8192" \
			"loopmqctl lists losetup's attach"
		same "$("$LOOPMQCTL" -l -J -O NAME,$STATE $DM | jnorm)" "$("$LOSETUP" -l -J -O NAME,$STATE $DM | jnorm)" \
			"both tools list losetup's attach identically"
		check "loopmqctl -d detaches losetup's attach" "$LOOPMQCTL" -d $DM
	else
		fail "util-linux losetup attaches $DM" "$err"
	fi
else
	skip "loopmq against the stock driver" "the driver under test is loop"
fi

# --- (c) formats ---------------------------------------------------------------
D=$("$LOOPMQCTL" -f --show -o 512 $F)
j=$("$LOOPMQCTL" -l -J --output-all $D)
check "-J --output-all is valid JSON" jq -e . <<<"$j"
is "$(jq -r '.loopdevices[0] | [(.name|type), (.autoclear|type), (."back-file"|type),
	(."back-ino"|type), (."back-maj:min"|type), (."maj:min"|type), (.offset|type),
	(.partscan|type), (.ro|type), (.sizelimit|type), (.dio|type), (."log-sec"|type)] | join(",")' <<<"$j")" \
	"string,boolean,string,number,string,string,number,boolean,boolean,number,boolean,number" \
	"JSON types as losetup's"
is "$(jq -r '.loopdevices[0].offset' <<<"$j")" 512 "JSON offset value"
is "$(jq -r '.loopdevices[0]."maj:min"' <<<"$j")" "$(sysv $D dev)" "MAJ:MIN is the device's"
if lmq_is_mq; then
	is "$(jq -r '.loopdevices[0].mode' <<<"$j")" "$(sysv $D loopmq/mode)" "JSON mode is sysfs mode"
	is "$(jq -r '.loopdevices[0] | [.direct_io, .dio_chosen, .dio_reason] | join(" ")' <<<"$j")" \
		"$(sed -n 's/^\(setting\|chosen\|reason\) //p' /sys/block/${D##*/}/loopmq/dio_auto | tr '\n' ' ' | sed 's/ $//')" \
		"JSON direct_io, dio_chosen, dio_reason are sysfs loopmq/dio_auto's"
	is "$(jq -r '[.loopdevices[0] | .dio_holes_permille, .dio_unwritten_permille, .dio_shared_permille, .dio_costly_permille, .dio_block_size, .dio_switches | type] | unique | join(",")' <<<"$j")" \
		number "direct-I/O numbers are numbers"
	is "$(jq -r '[.loopdevices[0] | .inline, ."aio-inline", ."aio-async", .kthread, .fallbacks | type] | unique | join(",")' <<<"$j")" \
		number "stats columns are numbers"
fi
# DIRECT-IO (setting:chosen) is two keys in JSON, direct_io and dio_chosen
is "$(jq -r '.loopdevices[0] | keys | length' <<<"$j")" "$(($("$LOOPMQCTL" -h | awk '/^Available output columns/ { f = 1; next } f && !NF { exit } f' | wc -l) + 1))" \
	"--output-all has every column of --help"
is "$("$LOOPMQCTL" -l | head -n 1 | tr -s ' ')" "NAME SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE DIO LOG-SEC MODE DIRECT-IO DIO-REASON" \
	"default -l columns: losetup's plus MODE, DIRECT-IO, DIO-REASON"
is "$("$LOOPMQCTL" -l -n -O name,offset $D | tr -s ' ')" "$D 512" "-O takes lower-case names"
is "$("$LOOPMQCTL" -l -O +MAJ:MIN $D | head -n 1 | tr -s ' ')" "NAME SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE DIO LOG-SEC MODE DIRECT-IO DIO-REASON MAJ:MIN" \
	"-O +COL appends to the default columns"
is "$("$LOOPMQCTL" -l -n $D | wc -l)" 1 "-n: no header line"
is "$("$LOOPMQCTL" $D)" "$D: [$(printf '%04d' "$(stat -c '%d' $F)")]:$(stat -c %i $F) ($F), offset 512" \
	"one-device line: [devno]:inode (file), offset"
is "$("$LOOPMQCTL" -l -J $D /dev/${LMQ_NAME}0 2>/dev/null | jq '.loopdevices | length')" 2 "-l -J with two devices lists both (bound or not)"
"$LOOPMQCTL" -d $D

done_testing
