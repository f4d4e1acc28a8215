#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# 80-power-loss: do REQ_PREFLUSH and REQ_FUA through loopmq reach stable
# storage?  Power loss modelled as file-system developers do: the backing
# file system (ext4 or xfs) sits on dm-log-writes, which logs each write
# only once a flush (or FUA) has made it stable; an upper ext4 or xfs on
# /dev/loopmq0 (its image a file on the logged file system) runs
# lmq-plwriter, which places a log mark after every fsync / fdatasync /
# RWF_DSYNC batch returned.  Then lmq-logreplay replays the log onto a
# second region, to up to 3 points per cell (a writer's mark, a FLUSH entry,
# a FUA entry, "a crash at entry N" = up to the last FLUSH at or before N,
# or a bare prefix 0..N) and to the end; at each, on a dm-snapshot of the
# replay (so journal recovery does not spoil the next, incremental,
# replay): mount the backing fs, attach the image with loopmq (the cell's
# mode and direct I/O), mount the upper fs, "lmq-plwriter check" that
# everything acknowledged before the point's last mark is there, unmount,
# e2fsck -fn / xfs_repair -n the upper fs, then the backing fs.  Why each
# replay point is a legal post-power-loss state: the header of
# tests/progs/lmq-logreplay.c.
# Cells sample mode x dio x lower fs x upper fs (every value of each at
# least once; also fallocated/sparse image, buffered/O_DIRECT writer) from
# a seed printed first (pl.seed=S on the kernel command line, or PL_SEED,
# repeats it; pl.cells=N / PL_CELLS sets the number of cells, default 4).
# One more cell puts loopmq directly on the logged device, no backing fs,
# with direct I/O: the remap path (its requests go to dm-log-writes as
# bios); it must have remapped requests.  Another pins a fully written
# image on the backing fs (LOOPMQ_SET_REMAP): its requests are remapped to
# the logged device too, and so must be some.
# Negative control, same boot: loopmq loaded with fault_drop_flush=1
# (FLUSH acknowledged without syncing the backing file, FUA without
# O_DSYNC) must lose acknowledged writes at some replay point, or this test
# fails; so must a second control through the remap path, and a third
# through a pinned file.  A module without that parameter gets an emulated control instead
# (the writer skips its syncs but still marks), with a diag line.
# /dev/vda: A 256 MiB logged device | C 256 MiB replay target | B 768 MiB
# log | D 256 MiB snapshot exceptions.  xfs below 300 MB needs mkfs.xfs's
# fstests escape (TEST_DIR, TEST_DEV, QA_CHECK_FS).
DESCRIPTION="dm-log-writes replay: no write acknowledged by a flush or FUA is lost"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	modprobe dm-mod 2>/dev/null
	modprobe dm-log-writes 2>/dev/null || skip_all "no dm-log-writes module"
	modprobe dm-snapshot 2>/dev/null || skip_all "no dm-snapshot module"
	[ -c /dev/mapper/control ] || skip_all "no device-mapper"
	require_cmd dmsetup lmq-logreplay lmq-plwriter mkfs.ext4 mkfs.xfs e2fsck xfs_repair
}
. /tests/lib/guest.sh
DEV=$(lmq_dev 0)

arg() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" /proc/cmdline; }
seed=${PL_SEED:-$(arg pl.seed)}
seed=${seed:-$(( $(date +%s%N) / 1000 % 1000000000 ))}
ncells=${PL_CELLS:-$(arg pl.cells)}
ncells=${ncells:-4}
RANDOM=$seed
# rnd N: R=a number below N.  Never through $(...): bash reseeds RANDOM in
# a subshell, and the seed would not repeat the run.
rnd() { R=$(( (RANDOM << 15 | RANDOM) % $1 )); }
diag "seed $seed, $ncells cells + control (repeat: tests/vm/run --append 'pl.seed=$seed pl.cells=$ncells' ...)"

W=/tmp/pl LOW=/mnt/pl-low UP=/mnt/pl-up
mkdir -p $W $LOW $UP
MiB=2048			# sectors
A_OFF=0 A_LEN=$((256 * MiB))
C_OFF=$((256 * MiB)) C_LEN=$((256 * MiB))
B_OFF=$((512 * MiB)) B_LEN=$((768 * MiB))
D_OFF=$((1280 * MiB)) D_LEN=$((256 * MiB))
[ "$(blockdev --getsz /dev/vda)" -ge $((D_OFF + D_LEN)) ] || skip_all "/dev/vda is smaller than 1.5 GiB"
IMG_MB=96
export TEST_DIR=/tmp TEST_DEV=/dev/null QA_CHECK_FS=1	# small xfs (see above)

# run LOGNAME CMD...: CMD's output to $W/LOGNAME; on failure show its tail
run() {
	local f=$W/$1 rc
	shift
	"$@" >"$f" 2>&1; rc=$?
	[ $rc = 0 ] || { echo "# '$*' exited $rc:"; tail -n 15 "$f" | sed 's/^/#   /'; }
	return $rc
}
mkfs_fs() {	# mkfs_fs FS DEV
	case $1 in
	ext4) mkfs.ext4 -q -F -b 4096 -N 256 -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$2";;
	xfs) mkfs.xfs -q -f -K "$2";;
	esac
}
mount_fs() {	# mount_fs FS DEV DIR
	case $1 in
	ext4) mount -t ext4 -o noinit_itable "$2" "$3";;
	xfs) mount -t xfs "$2" "$3";;
	esac
}
fsck_fs() {	# fsck_fs FS DEV: read-only check
	case $1 in
	ext4) e2fsck -fn "$2";;
	xfs) xfs_repair -n "$2";;
	esac
}
attach() {	# attach DIO IMG: $DEV on IMG, checked
	losetup --direct-io="$1" $DEV "$2" || return 1
	local d; d=$(cat "$(lmq_sys 0)/loop/dio")
	[ "$d" = "$([ "$1" = on ] && echo 1 || echo 0)" ] || { echo "dio is $d, want $1"; return 1; }
}
load() {	# load MODE [PARAM...]
	lmq_unload >/dev/null 2>&1
	modprobe loopmq mode="$1" "${@:2}" || return 1
	[ "$(cat "$(lmq_sys 0)/loopmq/mode")" = "$1" ] || { echo "mode is not $1"; return 1; }
}
lmq_unload() {
	losetup -d $DEV 2>/dev/null
	grep -q '^loopmq ' /proc/modules || return 0
	local i
	for i in $(seq 20); do rmmod loopmq 2>/dev/null && return 0; sleep 0.2; done
	return 1
}
teardown() {
	umount $UP 2>/dev/null
	losetup -d $DEV 2>/dev/null
	umount $LOW 2>/dev/null
	local d
	for d in plS plLW plA plB plC plD; do
		dms info $d >/dev/null 2>&1 && dms remove $d
	done
	return 0
}
# Fresh linear devices for a cell (new block devices: no stale page cache),
# the logged device and the replay target zeroed, the log's super wiped.
make_regions() {
	teardown
	blkdiscard -f -z -o $((A_OFF * 512)) -l $((A_LEN * 512)) /dev/vda 2>/dev/null &&
		blkdiscard -f -z -o $((C_OFF * 512)) -l $((C_LEN * 512)) /dev/vda 2>/dev/null &&
		blkdiscard -f -z -o $((B_OFF * 512)) -l $((1 << 20)) /dev/vda 2>/dev/null || return 1
	dms create plA --table "0 $A_LEN linear /dev/vda $A_OFF" &&
		dms create plB --table "0 $B_LEN linear /dev/vda $B_OFF" &&
		dms create plC --table "0 $C_LEN linear /dev/vda $C_OFF" &&
		dms create plD --table "0 $D_LEN linear /dev/vda $D_OFF" || return 1
	# the replay assumes A and C start equal: both zeroes (spot check)
	local d
	for d in plA plC; do
		cmp -s -n $((4 << 20)) /dev/mapper/$d /dev/zero &&
			cmp -s -n $((4 << 20)) <(dd if=/dev/mapper/$d bs=1M skip=250 count=4 status=none) /dev/zero ||
			{ echo "# $d is not zeroed"; return 1; }
	done
}

# ---- one trial ("cell") ----------------------------------------------------
# Results of the last cell: cell_points, cell_lost (points with losses),
# cell_bad (other failures, described in cell_why), cell_desc.
total_points=0 total_lost=0

# check_upper MARKARG: the writer's files on the mounted upper fs, then
# its fsck; sets pt_rc, pt_msg and fsck_ok (check_point's)
check_upper() {
	local out rc
	out=$(lmq-plwriter check $1 -d $UP/d -l $W/wlog 2>&1); rc=$?
	printf '%s\n' "$out" >$W/check.log
	umount $UP || rc=2
	pt_msg=$(tail -n 1 <<<"$out" | sed -E 's/^checked ([0-9]+) files, ([0-9]+) blocks at (.*) \(log line [0-9]+\): [0-9]+ writes in the log, /\3: /')
	if [ $rc = 0 ] || [ $rc = 1 ]; then
		if run upfsck.log fsck_fs "$upfs" $DEV; then
			fsck_ok=1
		else
			pt_msg+="; upper $upfs fsck FAILED"
			[ $rc = 0 ] && rc=2
		fi
	fi
	pt_rc=$rc
	[ $rc = 1 ] && grep -m 5 '^LOST' $W/check.log | sed 's/^/#   /'
}

# check_point DESC MARKARG: the replayed state on a snapshot; sets pt_rc
# (0 intact, 1 lost writes, 2 something else failed) and pt_msg
check_point() {
	local desc=$1 markarg=$2 out rc fsck_ok=0
	pt_rc=2 pt_msg=
	if ! run snap.log dms create plS --table "0 $C_LEN snapshot /dev/mapper/plC /dev/mapper/plD N 8"; then
		pt_msg="dm-snapshot of the replay failed"; return
	fi
	if [ "$lowfs" = raw ]; then
		if ! run attach.log attach "$dio" /dev/mapper/plS; then
			pt_msg="cannot attach the replayed device"
		elif ! run upmount.log mount_fs "$upfs" $DEV $UP; then
			pt_rc=1 pt_msg="the upper $upfs does not mount: $(dmesg | tail -n 2 | tr '\n' ' ')"
		else
			check_upper "$markarg"
		fi
	elif ! run lowmount.log mount_fs "$lowfs" /dev/mapper/plS $LOW; then
		pt_msg="the backing $lowfs does not mount: $(tail -n 1 $W/lowmount.log)"
	elif [ ! -f $LOW/img ]; then
		pt_msg="no image file on the backing fs"
	elif ! run attach.log attach "$dio" $LOW/img; then
		pt_msg="cannot attach the image"
	elif ! run upmount.log mount_fs "$upfs" $DEV $UP; then
		pt_rc=1 pt_msg="the upper $upfs does not mount: $(dmesg | tail -n 2 | tr '\n' ' ')"
	else
		check_upper "$markarg"
	fi
	umount $UP 2>/dev/null
	losetup -d $DEV 2>/dev/null
	if mountpoint -q $LOW; then
		umount $LOW
		if run lowfsck.log fsck_fs "$lowfs" /dev/mapper/plS; then
			fsck_ok=$((fsck_ok * 2))
		else
			pt_msg+="; backing $lowfs fsck FAILED (a replay problem?)"
			[ $pt_rc = 0 ] && pt_rc=2
		fi
	fi
	dms remove plS || { pt_msg+="; cannot remove the snapshot"; pt_rc=2; }
	[ "$fsck_ok" = 2 ] && pt_msg+="; fsck clean ($upfs above, $lowfs below)"
	[ "$lowfs" = raw ] && [ "$fsck_ok" = 1 ] && pt_msg+="; fsck of the upper $upfs clean"
	return 0
}

# run_cell N MODE DIO LOWFS UPFS ALLOC IO WSEED CONTROL
# CONTROL: "" (a trial), "param" (fault_drop_flush=1), "emulated" (writer -x)
run_cell() {
	local n=$1 control=$9 i kinds k setup last end want args pts=() p e name
	mode=$2 dio=$3 lowfs=$4 upfs=$5 alloc=$6 io=$7 wseed=$8
	cell_desc="$mode dio=$dio $lowfs/$upfs $alloc $io seed $wseed"
	cell_points=0 cell_lost=0 cell_bad=0 cell_why= cell_lostpts=
	local t0=$SECONDS
	# set up: log-writes over A, the backing fs, the image, loopmq, the upper fs
	make_regions || { cell_bad=1 cell_why="cannot set up the dm devices"; return; }
	if ! run lw.log dms create plLW --table "0 $A_LEN log-writes /dev/mapper/plA /dev/mapper/plB"; then
		cell_bad=1 cell_why="cannot create the log-writes device"; return
	fi
	local lparam=()
	[ "$control" = param ] && lparam=(fault_drop_flush=1)
	if [ "$lowfs" = raw ]; then
		# loopmq on the logged device itself: the remap path with dio on
		if ! run load.log load "$mode" "${lparam[@]}" ||
		   ! run attach.log attach "$dio" /dev/mapper/plLW ||
		   ! run mkfs-up.log mkfs_fs "$upfs" $DEV ||
		   ! run mount-up.log mount_fs "$upfs" $DEV $UP ||
		   ! mkdir $UP/d; then
			cell_bad=1 cell_why="set-up failed"; return
		fi
	elif ! run mkfs-low.log mkfs_fs "$lowfs" /dev/mapper/plLW ||
	   ! run mount-low.log mount_fs "$lowfs" /dev/mapper/plLW $LOW ||
	   ! case $alloc in
	     falloc) fallocate -l ${IMG_MB}M $LOW/img;;
	     pinned) dd if=/dev/zero of=$LOW/img bs=1M count=$IMG_MB oflag=direct conv=fsync status=none;;
	     *) truncate -s ${IMG_MB}M $LOW/img;;
	     esac ||
	   ! run load.log load "$mode" "${lparam[@]}" ||
	   ! run attach.log attach "$dio" $LOW/img ||
	   ! { [ "$alloc" != pinned ] || run pin.log lmq-ioctl set-remap $DEV 1; } ||
	   ! run mkfs-up.log mkfs_fs "$upfs" $DEV ||
	   ! run mount-up.log mount_fs "$upfs" $DEV $UP ||
	   ! mkdir $UP/d; then
		cell_bad=1 cell_why="set-up failed"; return
	fi
	# the set-up made durable (twice: the upper's writeback lands in the
	# backing file's page cache, the second sync writes that back)
	sync; sync
	dms message plLW 0 mark setup || { cell_bad=1 cell_why="mark failed"; return; }
	args=(-s "$wseed" -n 100 -L plLW -d $UP/d -l $W/wlog)
	[ "$io" = direct ] && args+=(-D)
	[ "$control" = emulated ] && args+=(-x)
	if ! run writer.log lmq-plwriter write "${args[@]}"; then
		cell_bad=1 cell_why="the writer failed"; return
	fi
	local wt=$((SECONDS - t0))
	if { [ "$lowfs" = raw ] && [ "$dio" = on ]; } || [ "$alloc" = pinned ]; then
		remapped=$(lmq_stat 0 remap)
		cell_desc+=", $remapped requests remapped"
		[ "${remapped:-0}" -gt 0 ] ||
			{ cell_bad=1 cell_why="no request took the remap path"; return; }
	fi
	umount $UP && losetup -d $DEV && { [ "$lowfs" = raw ] || umount $LOW; } && dms remove plLW ||
		{ cell_bad=1 cell_why="tear-down after writing failed"; return; }
	# checks run on a loopmq without the fault, in the same mode
	run load.log load "$mode" || { cell_bad=1 cell_why="cannot reload loopmq"; return; }
	if ! run list.log lmq-logreplay list -s /dev/mapper/plB; then
		cell_bad=1 cell_why="lmq-logreplay list failed: $(tail -n 1 $W/list.log)"; return
	fi
	grep -v '^#' $W/list.log >$W/sync
	last=$(sed -n 's/.*, \([0-9]*\) entries,.*/\1/p' $W/list.log)
	last=$((last - 1))
	if ! tail -n 1 $W/sync | grep -q "^$last - 0 MARK dm-log-writes-end$"; then
		cell_bad=1 cell_why="the log does not end with dm-log-writes-end (out of log space?)"; return
	fi
	setup=$(awk '$4 == "MARK" && $5 == "setup" { print $1; exit }' $W/sync)
	# candidate points after the set-up mark: "KIND REPLAY-ARGS EFFECTIVE-END"
	awk -v s="$setup" '$1 > s' $W/sync >$W/after
	pick() { awk -v want="$1" 'want == "mark" && $4 == "MARK" && $5 ~ /^pl-/ { print "mark -m " $5, $1 }
		want == "flush" && $4 ~ /FLUSH/ { print "flush -e " $1, $1 }
		want == "fua" && $4 ~ /FUA/ && $4 !~ /FLUSH/ { print "fua -e " $1, $1 }' $W/after; }
	if [ "$control" ]; then
		# marks spread over the run: each should show losses
		mapfile -t pts < <(pick mark | awk '{ a[NR] = $0 } END { if (NR) { print a[int(NR / 4) + 1]; print a[int(NR / 2) + 1]; print a[int(3 * NR / 4) + 1] } }')
	else
		# one writer mark, and two of flush / fua / crash-at-N / prefix,
		# cycling with the cell number so every kind comes up
		kinds=(flush fua between prefix)
		for k in mark "${kinds[$(((2 * n) % 4))]}" "${kinds[$(((2 * n + 1) % 4))]}"; do
			case $k in
			mark|flush|fua)
				mapfile -t c < <(pick $k)
				[ ${#c[@]} -gt 0 ] && rnd ${#c[@]} && pts+=("${c[R]}");;
			between)
				# a crash at entry N: up to the last FLUSH at or before N
				rnd $((last - setup)); p=$((setup + 1 + R))
				e=$(awk -v p="$p" '$1 <= p && $4 ~ /FLUSH/ { e = $1 } END { print e }' $W/sync)
				[ -n "$e" ] && [ "$e" -gt "$setup" ] && pts+=("between -f $p $e");;
			prefix)
				# any prefix: a flush's group of writes partly there
				rnd $((last - setup)); p=$((setup + 1 + R))
				pts+=("prefix -e $p $p");;
			esac
		done
	fi
	# incremental replay in order of the effective end
	mapfile -t pts < <(printf '%s\n' "${pts[@]}" | sort -n -k4 -u | sort -n -k4)
	local next=0 lostat=()
	for p in "${pts[@]}"; do
		read -r k args_a args_b end <<<"$p"
		if ! out=$(lmq-logreplay replay -S $next $args_a $args_b /dev/mapper/plB /dev/mapper/plC 2>&1); then
			cell_bad=$((cell_bad + 1)) cell_why+="replay $args_a $args_b failed: $out; "
			continue
		fi
		got=$(sed -n 's/.* last=\([-0-9]*\) .*/\1/p' <<<"$out")
		name=$(sed -n 's/.* lastmark=\([^ ]*\) .*/\1/p' <<<"$out")
		if [ "$got" != "$end" ]; then
			cell_bad=$((cell_bad + 1)) cell_why+="replay $args_a $args_b ended at $got, want $end; "
			continue
		fi
		next=$((end + 1))
		case $name in pl-*) markarg="-M $name";; *) markarg="-M -";; esac
		check_point "$k" "$markarg"
		cell_points=$((cell_points + 1))
		echo "#   point $k ($args_a $args_b -> entries 0..$end, last mark $name): $pt_msg"
		case $pt_rc in
		0) ;;
		1) cell_lost=$((cell_lost + 1)) lostat+=("$k@$end");;
		*) cell_bad=$((cell_bad + 1)) cell_why+="point $k@$end: $pt_msg; ";;
		esac
	done
	cell_lostpts=${lostat[*]}
	# the end of the log: a clean shutdown, every write there
	if out=$(lmq-logreplay replay -S $next -a /dev/mapper/plB /dev/mapper/plC 2>&1); then
		check_point final -F
		cell_points=$((cell_points + 1))
		echo "#   final state (entries 0..$last): $pt_msg"
		case $pt_rc in
		0) ;;
		1) cell_lost=$((cell_lost + 1)) cell_lostpts+=" final";;
		*) cell_bad=$((cell_bad + 1)) cell_why+="final: $pt_msg; ";;
		esac
	else
		cell_bad=$((cell_bad + 1)) cell_why+="final replay failed: $out; "
	fi
	cell_desc+=" ($((SECONDS - t0)) s, writer done at ${wt} s, $((last + 1)) log entries)"
	teardown
}

# ---- the matrix ------------------------------------------------------------
# every value of each dimension: modes permuted, each binary dimension
# balanced (half and half, shuffled); cells past 4 drawn at random
# shuffle WORD...: SH=the words in a random order
shuffle() {
	local i j x
	SH=("$@")
	for ((i = ${#SH[@]} - 1; i > 0; i--)); do
		rnd $((i + 1)); j=$R
		x=${SH[i]}; SH[i]=${SH[j]}; SH[j]=$x
	done
}
# balanced A B: SH=ncells words, half A and half B, shuffled
balanced() {
	local v=() i
	for ((i = 0; i < ncells; i++)); do
		if [ $((i % 2)) = 0 ]; then v+=("$1"); else v+=("$2"); fi
	done
	shuffle "${v[@]}"
}
shuffle direct kthread aio auto; M=("${SH[@]}")
for ((i = 4; i < ncells; i++)); do shuffle direct kthread aio auto; M+=("${SH[0]}"); done
balanced off on; DIO=("${SH[@]}")
balanced ext4 xfs; LFS=("${SH[@]}")
balanced ext4 xfs; UFS=("${SH[@]}")
balanced falloc sparse; AL=("${SH[@]}")
balanced buffered direct; IO=("${SH[@]}")

# trial N MODE DIO LOWFS UPFS ALLOC IO [WHAT]: cell N+1 with a new writer
# seed, counted and reported (its variables are not "c": run_cell sets one)
trial() {
	rnd 1000000000; local ws=$R cn=$(($1 + 1))
	echo "# cell $cn: $2 dio=$3 $4/$5 $6 $7 seed $ws${8:+ ($8)}"
	run_cell "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$ws" ""
	total_points=$((total_points + cell_points)) total_lost=$((total_lost + cell_lost))
	if [ "$cell_bad" = 0 ] && [ "$cell_lost" = 0 ]; then
		pass "cell $cn $cell_desc: $cell_points points, nothing lost"
	elif [ "$cell_lost" != 0 ]; then
		fail "cell $cn $cell_desc" "acknowledged writes lost at $cell_lostpts${cell_why:+; $cell_why}"
	else
		fail "cell $cn $cell_desc" "$cell_why"
	fi
}
t_start=$SECONDS
for ((i = 0; i < ncells; i++)); do
	trial "$i" "${M[i]}" "${DIO[i]}" "${LFS[i]}" "${UFS[i]}" "${AL[i]}" "${IO[i]}"
done
# the remap path: loopmq directly on the logged device with direct I/O, so
# its requests reach dm-log-writes as bios (loopmq_remap.c); a random mode,
# upper fs and writer I/O
shuffle direct kthread aio auto; rm=${SH[0]}
shuffle ext4 xfs; ru=${SH[0]}
shuffle buffered direct; rio=${SH[0]}
trial "$ncells" "$rm" on raw "$ru" - "$rio" "the remap path"
# and a pinned image file (loopmq_pin.c): its requests go to the logged
# device as bios too, its FLUSH a flush of that device
shuffle direct kthread aio auto; pm=${SH[0]}
shuffle on off; pd=${SH[0]}
shuffle ext4 xfs; pl=${SH[0]}
shuffle ext4 xfs; pu=${SH[0]}
shuffle buffered direct; pio=${SH[0]}
trial $((ncells + 1)) "$pm" "$pd" "$pl" "$pu" pinned "$pio" "a pinned image file"

# ---- negative control --------------------------------------------------------
if modinfo -p loopmq 2>/dev/null | grep -q '^fault_drop_flush:'; then
	ctl=param ctldesc="fault_drop_flush=1"
else
	ctl=emulated ctldesc="emulated: the module has no fault_drop_flush, the writer skips its syncs"
	diag "no fault_drop_flush parameter in this loopmq: emulated control"
fi
rnd 1000000000; ws=$R
cio=buffered; rnd 2; [ $R = 1 ] && cio=direct
echo "# negative control ($ctldesc): auto dio=off ext4/ext4 falloc $cio seed $ws"
run_cell 9 auto off ext4 ext4 falloc "$cio" "$ws" "$ctl"
if [ "$cell_lost" -gt 0 ]; then
	pass "negative control ($ctldesc) $cell_desc: caught, acknowledged writes lost at $cell_lostpts"
	[ -z "$cell_why" ] || diag "the control also had: $cell_why"
else
	fail "negative control ($ctldesc) $cell_desc" "NOT caught: no lost writes at $cell_points points${cell_why:+; $cell_why}"
fi
# and through the remap path: fault_drop_flush must drop its FLUSH and FUA
if [ $ctl = param ]; then
	rnd 1000000000; ws=$R
	echo "# negative control of the remap path ($ctldesc): auto dio=on raw/ext4 $cio seed $ws"
	run_cell 10 auto on raw ext4 - "$cio" "$ws" param
	if [ "$cell_lost" -gt 0 ]; then
		pass "negative control of the remap path $cell_desc: caught, acknowledged writes lost at $cell_lostpts"
		[ -z "$cell_why" ] || diag "the control also had: $cell_why"
	else
		fail "negative control of the remap path $cell_desc" "NOT caught: no lost writes at $cell_points points${cell_why:+; $cell_why}"
	fi
	rnd 1000000000; ws=$R
	echo "# negative control of a pinned file ($ctldesc): auto dio=on ext4/ext4 pinned $cio seed $ws"
	run_cell 11 auto on ext4 ext4 pinned "$cio" "$ws" param
	if [ "$cell_lost" -gt 0 ]; then
		pass "negative control of a pinned file $cell_desc: caught, acknowledged writes lost at $cell_lostpts"
		[ -z "$cell_why" ] || diag "the control also had: $cell_why"
	else
		fail "negative control of a pinned file $cell_desc" "NOT caught: no lost writes at $cell_points points${cell_why:+; $cell_why}"
	fi
fi
diag "$ncells cells, $total_points replay points checked, $total_lost with lost writes (0 expected); $((SECONDS - t_start)) s"
lmq_unload
done_testing
