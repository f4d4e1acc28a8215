# SPDX-License-Identifier: GPL-2.0
# loopmq bench, guest side: sets up one backing, runs every (target, workload)
# cell of one group with fio and leaves per cell, in /out/bench/cells/, the
# fio job file, fio's JSON output and the counter snapshots (cells that could
# not run: one JSON line each in /out/bench/missing.jsonl), which
# bench/report.py reads.  bench/run concatenates a generated header (the
# variables below) with this file into one self-contained script per group.
# The experiments (bench/experiments/) source it for its setup helpers
# (setup_raw, prefill, nullb_new, dm_linear_up, loop_up, teardown ...):
# tests/vm/run puts it at /bench/guest/lib.sh in the guest.  Sourcing it
# only defines variables and functions; main() runs the group.
#
# Header variables:
#   GROUP      what to set up: null_blk | ram | lat10us | nullb-mem | xfs-file | ext4-file | tmpfs-file
#              | xfs-sparse | xfs-reflink | xfs-filling (a fresh image before every target:
#              fresh_image; xfs-filling's sparse image is filled through the target first)
#              | xfs-pinned | ext4-pinned (loopmq pins the image: loopmq_up)
#              | xfs-file-ext4 | xfs-file-ext4-discard (the xfs-file image, written anew
#              before every target; ext4 on the target's device and fio buffered on a
#              file in it: upper_up)
#   TARGETS    space-separated target[:mode] list, e.g. "backing dm-linear loop:dio-on loopmq:aio"
#              (dm-mpath-rq: request-based device-mapper, multipath with one path)
#              (loopmq attaches with direct I/O on, loopmq-dio-off with it off,
#              loopmq-dio-auto with dio_default=auto and an unmodified losetup)
#   WORKLOADS  space-separated workload names (see wl_args)
#   WORKLOAD_OPTS  one "name|fio options" line per workload, from bench/workloads
#   RUNTIME    seconds per measured run;  WARMUP  seconds of the discarded warm-up run
#   REPS       measured runs per cell;    CELL0   number of cells before this group
#   NCELLS     cells in the whole bench;  SIZE_MB I/O region / image file size
#   RAW_MB     raw device size;           KLABEL  6.1 | 6.12;  TIMING icount | realtime
#   HUGEPAGES  2 MiB hugetlb pages the guest reserved at boot for fio's buffers

OUT=/out/bench
RUNS=$OUT/missing.jsonl	# cells that could not run, with the reason
LOG=$OUT/guest.log
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

CELL=${CELL0:-0}
T_START=$(date +%s)
KREL=$(uname -r)
NULLB_CFG=/sys/kernel/config/nullb
MNT=/mnt/bench
DM_NAME=bench-linear
DM_MPATH=bench-mpath	# dm-mpath-rq: request-based dm over the raw device
RAWDEV=""		# the raw block device of this group
BACKDEV=""		# what loop/loopmq/dm-linear sit on (device or image file)
RAW=""			# raw backing kind under a file: ram
LOOPMQ_DEV=""
LOOPMQ_WHY=""		# why loopmq cells cannot run, when they cannot
LOOPMQ_DIO=""		# on | off: how LOOPMQ_DEV is attached
FRESH=""		# sparse | reflink: make BACKDEV anew before every target
ORIG=""			# reflink: the fully written image BACKDEV is a copy of
FREE0=""		# free blocks of its file system before any image (or copy) existed
PIN=""			# 1: loopmq pins BACKDEV and remaps to the disk under it
UPPER=""		# nodiscard | discard: ext4 (mkfs -E that) on each target's
			# device, fio on a file in it
UPPER_MNT=/mnt/upper
UPPER_FILE=""		# that file, while it is mounted (what fio reads and writes)
UPPER_MB=128		# its size

log() {	# to stderr, and to guest.log once main() made $OUT
	echo "bench[${GROUP:-}]: $*" >&2
	[ -d "$OUT" ] && echo "bench[${GROUP:-}]: $*" >>"$LOG"
}

# One JSON line for a cell that could not run.  Never invent numbers.
record_missing() {	# target mode workload reason
	jq -cn --arg k "$KLABEL" --arg kr "$(uname -r)" --arg t "$1" --arg m "$2" \
		--arg b "$BACKING" --arg raw "$RAW" --arg w "$3" --arg why "$4" \
		--arg timing "$TIMING" \
		'{kernel:$k, krel:$kr, target:$t, mode:$m, backing:$b, raw:$raw,
		  workload:$w, rep:0, ok:false, error:$why, timing:$timing}' >>"$RUNS"
}

# fio options of workload $1: the ones every workload shares, then its own
# from WORKLOAD_OPTS (bench/workloads' names and options).
wl_args() {
	local common="--direct=1 --time_based --size=${SIZE_MB}M --randrepeat=1 --norandommap"
	local n o
	while IFS='|' read -r n o; do
		[ "$n" = "$1" ] && { echo "$common $o"; return 0; }
	done <<<"$WORKLOAD_OPTS"
	return 1
}

# PIDs of the loopmq kthreads (any task whose name mentions loopmq).
loopmq_kthreads() {
	local p c
	for p in /proc/[0-9]*; do
		read -r c <"$p/comm" 2>/dev/null || continue
		case $c in *loopmq*|*lmq*) echo "${p#/proc/} $c";; esac
	done
}

# fio runs this (exec_prerun/exec_postrun) around every measured run, in
# every job of the run: one atomic append of the counters we need.  Builtins
# only, so it costs one bash start-up and nothing inside the measured window.
write_snap_helper() {
	cat >/tmp/bench-say <<'SAY'
#!/bin/bash
# progress line for cell $1, from the warm-up run's exec_prerun
m=$(cat "/tmp/bench-msg-$1" 2>/dev/null)
echo "$m (guest time $(( $(date +%s) - $(cat /tmp/bench-t0) ))s)" >/dev/console
SAY
	chmod +x /tmp/bench-say
	# xfs-sparse, xfs-reflink: before each workload's warm-up, write back what
	# the previous workload left dirty (a buffered target's writes, or direct
	# writes xfs turned into buffered ones), so that its writeback does not
	# run inside the next workload's measured runs; the guest time it took
	# goes to the log, as the price of the writes that the write cell left out.
	cat >/tmp/bench-sync <<SYNC
#!/bin/bash
d=\$(awk '\$1 == "Dirty:" { print \$2 }' /proc/meminfo)
t0=\$(date +%s%N); sync; t1=\$(date +%s%N)
echo "bench[$GROUP]: before cell \$1: sync: \$d KiB dirty, \$(( (t1 - t0) / 1000 )) us guest time" >>$LOG
exec /tmp/bench-say "\$1"
SYNC
	chmod +x /tmp/bench-sync
	date +%s >/tmp/bench-t0
	cat >/tmp/bench-snap <<'SNAP'
#!/bin/bash
# $1 = run tag, $2 = pre|post;  env: SNAP_FILE, SNAP_KPIDS, SNAP_STATF
buf="@ $1 $2 $$"$'\n'
while read -r a b rest; do
	case $a in
	ctxt) buf+="ctxt $b"$'\n';;
	cpu) buf+="cpu $b $rest"$'\n';;
	esac
done </proc/stat
for p in $SNAP_KPIDS; do
	while read -r a b; do
		case $a in
		voluntary_ctxt_switches:|nonvoluntary_ctxt_switches:) buf+="k $p $a $b"$'\n';;
		esac
	done <"/proc/$p/status"
done
if [ -n "$SNAP_STATF" ] && [ -r "$SNAP_STATF" ]; then
	while read -r a b; do buf+="s $a $b"$'\n'; done <"$SNAP_STATF"
fi
# the page cache (KiB): what buffered I/O keeps, once or twice
while read -r a b rest; do
	[ "$a" = Cached: ] && { buf+="m $b"$'\n'; break; }
done </proc/meminfo
# after a run, the image file's own pages in the page cache (bytes): the
# lower copy that buffered loop I/O keeps beside the device's (one fincore,
# outside the measured window)
if [ "$2" = post ] && [ -n "$SNAP_IMAGE" ]; then
	r=$(fincore -b -n -o RES "$SNAP_IMAGE" 2>/dev/null) && buf+="r $r"$'\n'
fi
# with a file system on the device: the file fio uses, in its page cache
# (the upper copy)
if [ "$2" = post ] && [ -n "$SNAP_UPPER" ]; then
	r=$(fincore -b -n -o RES "$SNAP_UPPER" 2>/dev/null) && buf+="u $r"$'\n'
fi
printf '%s' "$buf" >>"$SNAP_FILE"
SNAP
	chmod +x /tmp/bench-snap
}

set_sched_none() {	# $1 = /dev/xxx
	local d q
	d=$(basename "$(readlink -f "$1")")
	q=/sys/block/$d/queue/scheduler
	[ -w "$q" ] && echo none >"$q" 2>/dev/null
	[ -r "$q" ] && sed 's/.*\[\(.*\)\].*/\1/' "$q" || echo none
}

# fio reads runtime=0.5 as 0 (no limit): always give it milliseconds.
fio_ms() { awk -v s="$1" 'BEGIN { printf "%dms", s * 1000 + 0.5 }'; }

# fio job file for one target: per workload a warm-up run, then REPS
# stonewalled measured runs (job names wI-warm, wI-rJ).  One fio process per
# target, because fio's start-up costs seconds of host time under TCG.
target_jobfile() {	# dev first-cell-number
	local w i=0 args a r
	echo "[global]"
	echo "filename=${UPPER_FILE:-$1}"
	echo "group_reporting"
	echo "mem=shmhuge"	# I/O buffers in hugetlb pages: see bench/run
	for w in $WORKLOADS; do
		i=$((i + 1))
		args=$(wl_args "$w") || continue
		echo "[w$i-warm]"
		echo "stonewall"
		echo "new_group"
		for a in $args; do a=${a#--}; [ "$a" = group_reporting ] || echo "$a"; done
		echo "runtime=$(fio_ms "$WARMUP")"
		echo "exec_prerun=/tmp/bench-$([ -n "$FRESH" ] && echo sync || echo say) $(($2 + i))"
		for r in $(seq 1 "$REPS"); do
			echo "[w$i-r$r]"
			echo "stonewall"
			echo "new_group"
			for a in $args; do a=${a#--}; [ "$a" = group_reporting ] || echo "$a"; done
			echo "runtime=$(fio_ms "$RUNTIME")"
			echo "exec_prerun=/tmp/bench-snap w$i-r$r pre"
			echo "exec_postrun=/tmp/bench-snap w$i-r$r post"
		done
	done
}

# Run every workload on one target.  The host (bench/report.py) parses
# cells/ID.meta (one per cell) and the target's fio JSON and snapshots.
run_target() {	# target mode dev
	local target=$1 mode=$2 dev=$3 w i=0 id tid rc kp="" kn="" sched dio now
	now=$(date +%s)
	if [ "$GROUP" != tmpfs-file ] && [ "${dev#/dev/}" != "$dev" ] && [ ! -b "$dev" ]; then
		skip_target "$target" "$mode" "$dev is not a block device"
		return
	fi
	tid=$(printf '%s-%03d' "$KLABEL" "$((CELL + 1))")
	mkdir -p "$OUT/cells"
	export SNAP_FILE=$OUT/cells/$tid.snap SNAP_KPIDS="" SNAP_STATF="" SNAP_IMAGE="" SNAP_UPPER=""
	# a file backing: its page-cache residency after each run
	[ -f "$BACKDEV" ] && SNAP_IMAGE=$BACKDEV
	if [ "${target#loopmq}" != "$target" ]; then
		SNAP_STATF=/sys/block/$(basename "$dev")/loopmq/stats
		kp=$(loopmq_kthreads)
		SNAP_KPIDS=$(echo "$kp" | awk 'NF { print $1 }' | tr '\n' ' ')
		kn=$(echo "$kp" | awk 'NF { print $2 }' | tr '\n' ' ')
	fi
	: >"$SNAP_FILE"
	# xfs-filling: the sparse image is filled through the target first
	# (loopmq-dio-auto switches to direct I/O on the way); the workloads
	# then run on the filled image
	if [ "$FRESH" = filling ]; then
		local t0 t1
		t0=$(date +%s%N)
		prefill "$dev" || { skip_target "$target" "$mode" "filling $dev failed"; return; }
		t1=$(date +%s%N)
		log "filled $BACKDEV through $target${mode:+/$mode} in $(( (t1 - t0) / 1000000 )) ms guest time: $(image_state "$BACKDEV")"
	fi
	# xfs-file-ext4: ext4 on the device, fio on a file in it
	if [ -n "$UPPER" ]; then
		upper_up "$dev" || { skip_target "$target" "$mode" "ext4 on $dev failed"; upper_down; return; }
		SNAP_UPPER=$UPPER_FILE
	fi
	# direct I/O auto: what it chose, before the workloads and after
	local dioa=/sys/block/$(basename "$dev")/loopmq/dio_auto
	[ -r "$dioa" ] && sed 's/^/before /' "$dioa" >"$OUT/cells/$tid.dio"
	sched=$(set_sched_none "$dev")
	dio=$(cat "/sys/block/$(basename "$dev")/loop/dio" 2>/dev/null)
	target_jobfile "$dev" "$CELL" >"$OUT/cells/$tid.fio"
	for w in $WORKLOADS; do
		i=$((i + 1))
		id=$(printf '%s-%03d' "$KLABEL" "$((CELL + i))")
		printf '%s\n' "cell $((CELL + i))/$NCELLS: $KLABEL $target${mode:+/$mode} on $BACKING, $w" \
			>"/tmp/bench-msg-$((CELL + i))"
		jq -cn --arg id "$id" --arg fio "$tid" --arg tag "w$i-" --arg k "$KLABEL" \
			--arg kr "$KREL" --arg t "$target" --arg m "$mode" --arg b "$BACKING" \
			--arg raw "$RAW" --arg w "$w" --arg dev "$dev" --arg sched "$sched" \
			--arg dio "$dio" --arg kn "${kn% }" --arg timing "$TIMING" \
			--argjson runtime "$RUNTIME" --argjson warmup "$WARMUP" --argjson reps "$REPS" \
			'{id:$id, fio:$fio, tag:$tag, kernel:$k, krel:$kr, target:$t, mode:$m,
			  backing:$b, raw:$raw, workload:$w, device:$dev, scheduler:$sched,
			  loop_dio:$dio, kthread_names:$kn, timing:$timing, runtime_s:$runtime,
			  warmup_s:$warmup, reps:$reps}' >"$OUT/cells/$id.meta"
	done
	fio --output-format=json --output="$OUT/cells/$tid.json" "$OUT/cells/$tid.fio" \
		>/dev/null 2>"$OUT/cells/$tid.err"
	rc=$?
	[ -r "$dioa" ] && sed 's/^/after /' "$dioa" >>"$OUT/cells/$tid.dio"
	[ -n "$UPPER" ] && upper_down
	if [ $rc -ne 0 ]; then
		log "fio rc=$rc on $target/$mode: $(tail -c 300 "$OUT/cells/$tid.err")"
		echo "$rc $(tail -c 300 "$OUT/cells/$tid.err" | tr '\n"\\' '   ')" >"$OUT/cells/$tid.rc"
	fi
	CELL=$((CELL + i))
}

skip_target() {	# target mode reason
	local w
	for w in $WORKLOADS; do
		CELL=$((CELL + 1))
		echo "cell $CELL/$NCELLS: $KLABEL $1${2:+/$2} on $BACKING, $w: missing ($3)"
		record_missing "$1" "$2" "$w" "$3"
	done
}

prefill() {	# dev-or-file : write the whole I/O region once, sequentially
	fio --name=prefill --filename="$1" --rw=write --bs=1M --ioengine=libaio \
		--iodepth=8 --direct=1 --size="${SIZE_MB}M" --end_fsync=1 \
		--output-format=terse >/dev/null 2>/tmp/bench-prefill.err ||
		{ log "prefill of $1 failed: $(cat /tmp/bench-prefill.err)"; return 1; }
}

# xfs-file-ext4, xfs-file-ext4-discard: ext4 on the target's device, as a
# user puts a file system on a loop device, and a file of UPPER_MB in it,
# written and then read once with a cold page cache: the workloads find it
# in ext4's page cache (the upper copy) and, with buffered loop I/O, in the
# image's (the lower copy, which fincore counts after each run).  mkfs with
# or without discard: with it (mkfs.ext4's default) the loop driver punches
# the whole image out, and the file's blocks are allocated again as ext4
# writes them; without it the image stays written but for the ranges mkfs
# zeroes (loop's write-zeroes: unwritten extents on xfs).
upper_up() {	# dev -> UPPER_FILE
	mkfs.ext4 -F -q -E "$UPPER,lazy_itable_init=0,lazy_journal_init=0" "$1" ||
		{ log "mkfs.ext4 on $1 failed"; return 1; }
	mkdir -p $UPPER_MNT && mount -t ext4 "$1" $UPPER_MNT ||
		{ log "mount $1 failed"; return 1; }
	fio --name=upper --filename=$UPPER_MNT/file --rw=write --bs=1M --ioengine=psync \
		--size="${UPPER_MB}M" --end_fsync=1 --output-format=terse >/dev/null \
		2>/tmp/bench-upper.err ||
		{ log "writing $UPPER_MNT/file failed: $(cat /tmp/bench-upper.err)"; return 1; }
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cat $UPPER_MNT/file >/dev/null || return 1
	UPPER_FILE=$UPPER_MNT/file
	log "ext4 on $1, ${UPPER_MB} MiB file read once: cached $(fincore -b -n -o RES $UPPER_FILE) B above, $(fincore -b -n -o RES "$BACKDEV") B of the image below"
}

upper_down() {
	UPPER_FILE=""
	mountpoint -q $UPPER_MNT 2>/dev/null && umount $UPPER_MNT
	true
}

# ---- backings ---------------------------------------------------------------

nullb_new() {	# name memory_backed irqmode completion_nsec size_mb -> prints /dev/nullbN
	local d=$NULLB_CFG/$1
	mkdir "$d" || return 1
	echo 2 >"$d/queue_mode"
	echo "$5" >"$d/size"
	echo "$2" >"$d/memory_backed"
	echo "$3" >"$d/irqmode"
	echo "$4" >"$d/completion_nsec"
	echo 512 >"$d/blocksize"
	echo 1 >"$d/power" || return 1
	# newer kernels name the disk after the configfs directory
	if [ -e "/sys/block/$1" ]; then echo "/dev/$1"; else echo "/dev/nullb$(cat "$d/index")"; fi
}

setup_nullb_module() {
	grep -q configfs /proc/filesystems || modprobe configfs
	mountpoint -q /sys/kernel/config 2>/dev/null ||
		mount -t configfs none /sys/kernel/config 2>/dev/null
	modprobe null_blk nr_devices=0 || return 1
	[ -d $NULLB_CFG ] || { log "no $NULLB_CFG"; return 1; }
}

setup_raw() {	# ram | lat10us | nullb-mem -> RAWDEV
	case $1 in
	ram)
		modprobe brd rd_nr=1 rd_size=$((RAW_MB * 1024)) max_part=0 || return 1
		RAWDEV=/dev/ram0;;
	lat10us)
		setup_nullb_module || return 1
		RAWDEV=$(nullb_new lat10us 1 2 10000 "$RAW_MB") || return 1;;
	nullb-mem)
		# blk-mq and stores data (memory_backed=1), completes inline
		# (irqmode=0): a device request-based dm can stack on
		setup_nullb_module || return 1
		RAWDEV=$(nullb_new nullbmem 1 0 0 "$RAW_MB") || return 1;;
	esac
	udev_wait "$RAWDEV"
}

udev_wait() {	# the node may appear a moment after the device
	local i
	for i in $(seq 50); do [ -b "$1" ] && return 0; sleep 0.1; done
	log "$1 did not appear"; return 1
}

setup_fs() {	# xfs | ext4 on RAWDEV, image file -> BACKDEV
	case $1 in
	xfs)  mkfs.xfs -f -q "$RAWDEV" || return 1;;
	ext4) mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$RAWDEV" || return 1;;
	esac
	mkdir -p $MNT && mount -t "$1" "$RAWDEV" $MNT || return 1
	BACKDEV=$MNT/image
	prefill "$BACKDEV"
}

# xfs-sparse and xfs-reflink: an image on xfs whose first write to each block
# allocates (sparse: a hole) or copies (reflink: a shared extent).  Every
# target gets a fresh one (fresh_image, from run_targets), so each starts
# from the same state.  The I/O region is the whole image: SIZE_MB is set
# here from the file system's free space.
setup_fresh() {	# sparse | reflink | filling
	local avail
	FRESH=$1
	case $1 in
	sparse|filling) mkfs.xfs -f -q "$RAWDEV" || return 1;;
	reflink) mkfs.xfs -f -q -m reflink=1 "$RAWDEV" || return 1;;
	esac
	log "xfs features: $(xfs_db -r -c version "$RAWDEV" 2>&1 | sed 's/.*= //')"
	mkdir -p $MNT && mount -t xfs "$RAWDEV" $MNT || return 1
	avail=$(( $(stat -f -c '%a * %S' $MNT) / 1048576 ))
	# reflink: the original plus a copy whose every block may be copied
	# once; 32 MiB are left for metadata.  sparse: the same size.  Not the
	# whole free space: a buffered writer's delayed allocations reserve
	# worst-case bmap btree blocks for every separate extent
	# (xfs_bmap_worst_indlen), one per random 4 KiB write here, and an
	# image filling 92% of the file system stopped every buffered cell
	# after the same ~25K writes: on ENOSPC xfs_file_buffered_write flushes
	# the whole file system (xfs_flush_inodes) and retries, in the writer.
	SIZE_MB=$(( (avail - 32) / 2 / 16 * 16 ))
	log "xfs free ${avail} MiB: image and I/O region ${SIZE_MB} MiB (RAM disk ${RAW_MB} MiB)"
	[ "$SIZE_MB" -ge 64 ] || { log "too little space for a ${1} image"; return 1; }
	BACKDEV=$MNT/image
	if [ "$1" = reflink ]; then
		ORIG=$MNT/orig
		prefill "$ORIG" || return 1
		log "original $(image_state "$ORIG")"
	fi
	sync
	FREE0=$(stat -f -c %a $MNT)
}

# Allocated and shared blocks of an image, for the log: the run proves its
# own premise (a sparse image is mostly holes, a reflinked copy all shared).
image_state() {	# file
	local st ext
	st=$(stat -c '%s %b %B' "$1" 2>/dev/null) || { echo "$1: missing"; return; }
	# shellcheck disable=SC2086 # three numbers, split on purpose
	set -- "$1" $st
	# filefrag -s: write back first (what a buffered target left dirty is
	# allocated then); -v: "N: logical..: physical..: length: [expected:] flags"
	ext=$(filefrag -sv "$1" 2>/dev/null | awk -F: '
		$1 ~ /^ *[0-9]+$/ { n++; l = $4 + 0; t += l
			if ($0 ~ /shared/) { ns++; s += l }
			if ($0 ~ /unwritten/) { nu++; u += l } }
		END { printf "%d extents, %d blocks mapped; shared: %d extents, %d blocks; unwritten: %d extents, %d blocks",
			n, t, ns, s, nu, u }')
	echo "$1: size $(( $2 / 1048576 )) MiB, allocated $(( $3 * $4 / 1048576 )) MiB ($(( $3 * $4 / 4096 )) x 4 KiB; du $(du -k "$1" | cut -f1) KiB); $ext"
}

# A fresh image for the next target: the sparse image truncated anew (never
# written), or a new reflink copy of the fully written original.  The old
# one is removed first, and we wait until its blocks are free again: xfs
# frees a removed file's extents in the background (inodegc), and freeing
# the previous target's tens of thousands of extents must neither run
# during the next target's measured runs nor leave it less free space.
fresh_image() {	# target-label
	local i free
	rm -f "$BACKDEV"
	for i in $(seq 1200); do
		sync
		free=$(stat -f -c %a $MNT)
		[ "$free" -ge $((FREE0 - 256)) ] && break	# within 1 MiB
		sleep 0.1
	done
	[ "$free" -ge $((FREE0 - 256)) ] ||
		{ log "only $free of $FREE0 blocks free after removing $BACKDEV"; return 1; }
	[ "$i" -gt 1 ] && log "the previous image's blocks were free after ${i} checks"
	echo 3 >/proc/sys/vm/drop_caches
	case $FRESH in
	sparse|filling) truncate -s "${SIZE_MB}M" "$BACKDEV" || return 1;;
	reflink) cp --reflink=always "$ORIG" "$BACKDEV" || return 1;;
	esac
	sync
	log "fresh image for $1: $(image_state "$BACKDEV"); fs free $(( $(stat -f -c '%a * %S' $MNT) / 1048576 )) MiB"
}

# ---- stacked targets ---------------------------------------------------------

dm_linear_up() {	# dev -> prints /dev/mapper/NAME
	local sz
	sz=$(blockdev --getsz "$1") || return 1
	echo "0 $sz linear $1 0" >/tmp/bench-table
	dmsetup --noudevsync --verifyudev create $DM_NAME /tmp/bench-table >&2 || return 1
	dmsetup --noudevsync mknodes $DM_NAME >/dev/null 2>&1
	if [ -b /dev/mapper/$DM_NAME ]; then
		echo /dev/mapper/$DM_NAME
	else
		echo "/dev/$(dmsetup info -c --noheadings -o blkdevname $DM_NAME)"
	fi
}

dm_linear_down() { dmsetup --noudevsync remove $DM_NAME >/dev/null 2>&1; }

# Request-based device-mapper over dev: multipath with one path, round-robin
# (repeat_count 1: both kernels take any other value as 1, with a warning),
# no hardware handler, queue_mode mq.  Request-based dm only stacks on blk-mq
# devices: on a bio-based one (brd) both kernels refuse the table ("table
# load rejected: including non-request-stackable devices"), and the reason
# (dmsetup's error and the kernel's) goes to stderr.
dm_mpath_up() {	# dev -> prints /dev/mapper/NAME
	local sz mm m
	sz=$(blockdev --getsz "$1") || return 1
	mm=$(cat "/sys/class/block/$(basename "$(readlink -f "$1")")/dev") || return 1
	for m in dm_multipath dm_round_robin; do
		grep -qw "^$m" /proc/modules || modprobe "$m" || return 1
	done
	echo "0 $sz multipath 2 queue_mode mq 0 1 1 round-robin 0 1 1 $mm 1" >/tmp/bench-table
	dmesg -c >/dev/null 2>&1
	if ! dmsetup --noudevsync --verifyudev create $DM_MPATH /tmp/bench-table >&2; then
		dmesg 2>/dev/null | grep -E 'device-mapper|multipath' | tail -n 3 >&2
		return 1
	fi
	dmsetup --noudevsync mknodes $DM_MPATH >/dev/null 2>&1
	# the table reads back without "queue_mode mq": request-based is
	# multipath's default, which it does not print (dm-mpath.c,
	# multipath_status); a request-based dm device has a choice of I/O
	# schedulers, a bio-based one none
	log "dm-mpath-rq: $(dmsetup table $DM_MPATH 2>&1); status: $(dmsetup status $DM_MPATH 2>&1); schedulers: $(cat "/sys/block/$(dmsetup info -c --noheadings -o blkdevname $DM_MPATH 2>/dev/null)/queue/scheduler" 2>&1)"
	if [ -b /dev/mapper/$DM_MPATH ]; then
		echo /dev/mapper/$DM_MPATH
	else
		echo "/dev/$(dmsetup info -c --noheadings -o blkdevname $DM_MPATH)"
	fi
}

dm_mpath_down() { dmsetup --noudevsync remove $DM_MPATH >/dev/null 2>&1; }

loop_up() {	# backing dio(on|off) -> prints /dev/loopN
	local dev
	grep -qw loop /proc/modules || modprobe loop 2>/dev/null
	dev=$(losetup -f --show --direct-io="$2" "$1") || return 1
	udev_wait "$dev" || return 1
	echo "$dev"
}

# loopmq: load, attach to BACKDEV with direct I/O on or off, report why when
# impossible.
loopmq_up() {	# on | off | auto
	local err dd=""
	LOOPMQ_DEV="" LOOPMQ_WHY="" LOOPMQ_DIO=$1
	# auto: as an unmodified losetup gets it in replace mode (dio_default)
	[ "$1" = auto ] && dd=dio_default=auto
	if ! err=$(modprobe loopmq $dd 2>&1); then
		LOOPMQ_WHY="modprobe loopmq failed: $err"; return 1
	fi
	udev_wait /dev/loopmq0 2>/dev/null ||
		{ LOOPMQ_WHY="/dev/loopmq0 missing after modprobe loopmq"; return 1; }
	# util-linux losetup (PATH puts it before busybox), then loopmqctl.
	if [ "$1" = auto ]; then
		if ! err=$(losetup /dev/loopmq0 "$BACKDEV" 2>&1); then
			LOOPMQ_WHY="attach failed: losetup: $err"; return 1
		fi
		[ "$(cat /sys/block/loopmq0/loopmq/direct_io 2>/dev/null)" = auto ] ||
			{ LOOPMQ_WHY="loopmq0 loopmq/direct_io is not auto after attach"; return 1; }
		log "direct I/O auto on $BACKDEV: $(tr '\n' ' ' </sys/block/loopmq0/loopmq/dio_auto)"
	elif ! err=$(losetup --direct-io="$1" /dev/loopmq0 "$BACKDEV" 2>&1); then
		if command -v loopmqctl >/dev/null &&
		   loopmqctl --direct-io="$1" /dev/loopmq0 "$BACKDEV" >/dev/null 2>&1; then
			:
		else
			LOOPMQ_WHY="attach failed: losetup: $err"; return 1
		fi
	fi
	[ -r /sys/block/loopmq0/loopmq/mode ] ||
		{ LOOPMQ_WHY="no /sys/block/loopmq0/loopmq/mode"; return 1; }
	[ "$(blockdev --getsize64 /dev/loopmq0 2>/dev/null || echo 0)" -gt 0 ] ||
		{ LOOPMQ_WHY="loopmq0 has size 0 after attach"; return 1; }
	[ "$1" = auto ] ||
	[ "$(cat /sys/block/loopmq0/loop/dio 2>/dev/null)" = "$([ "$1" = on ] && echo 1 || echo 0)" ] ||
		{ LOOPMQ_WHY="loopmq0 loop/dio is not $1 after attach"; return 1; }
	if [ -n "$PIN" ]; then
		if ! err=$(loopmqctl --remap=pinned /dev/loopmq0 2>&1); then
			LOOPMQ_WHY="loopmqctl --remap=pinned failed: $err"; return 1
		fi
		[ "$(cat /sys/block/loopmq0/loopmq/pinned 2>/dev/null)" = 1 ] ||
			{ LOOPMQ_WHY="loopmq0 not pinned after loopmqctl --remap=pinned"; return 1; }
		log "pinned $BACKDEV: $(image_state "$BACKDEV")"
	fi
	LOOPMQ_DEV=/dev/loopmq0
}

loopmq_down() {
	[ -b /dev/loopmq0 ] && losetup -d /dev/loopmq0 >/dev/null 2>&1
	rmmod loopmq >/dev/null 2>&1
	LOOPMQ_DEV="" LOOPMQ_WHY="" LOOPMQ_DIO=""
}

loopmq_set_mode() {	# mode
	local f=/sys/block/loopmq0/loopmq/mode
	echo "$1" >$f 2>/dev/null || return 1
	[ "$(cat $f)" = "$1" ]
}

# ---- one group -----------------------------------------------------------------

run_targets() {	# for every TARGETS entry on BACKDEV
	local tm t m dev dio
	for tm in $TARGETS; do
		t=${tm%%:*}; m=""
		[ "$t" != "$tm" ] && m=${tm#*:}
		if [ -n "$FRESH" ]; then
			# loopmq holds the old image open: detach, attach to the new one
			[ -n "$LOOPMQ_DEV" ] && loopmq_down
			if ! fresh_image "$tm"; then
				skip_target "$t" "$m" "could not make a fresh $FRESH image"
				continue
			fi
		else
			# xfs-file-ext4*: the file system the target before
			# made on the device left the image partly unwritten
			# or punched out: every target starts from the fully
			# written image, as the first one did
			if [ -n "$UPPER" ] && ! prefill "$BACKDEV"; then
				skip_target "$t" "$m" "could not rewrite $BACKDEV"
				continue
			fi
			# every target starts with a cold page cache, as on a
			# fresh image: a buffered target must not find the
			# image cached by the one before it
			sync
			echo 3 >/proc/sys/vm/drop_caches
		fi
		case $t in
		backing)
			run_target backing "" "$BACKDEV";;
		dm-linear)
			if dev=$(dm_linear_up "$BACKDEV") && [ -b "$dev" ]; then
				run_target dm-linear "" "$dev"
			else
				skip_target dm-linear "" "dmsetup create failed"
			fi
			dm_linear_down;;
		dm-mpath-rq)
			if dev=$(dm_mpath_up "$BACKDEV" 2>"$OUT/err") && [ -b "$dev" ]; then
				run_target dm-mpath-rq "" "$dev"
			else
				skip_target dm-mpath-rq "" "request-based dm refused: $(tr '\n' ' ' <"$OUT/err" | tail -c 300)"
			fi
			dm_mpath_down;;
		loop)
			if dev=$(loop_up "$BACKDEV" "${m#dio-}" 2>"$OUT/err"); then
				if [ "$m" = dio-on ] && [ "$(cat /sys/block/${dev#/dev/}/loop/dio)" != 1 ]; then
					skip_target loop "$m" "loop refused direct I/O on this backing"
				else
					run_target loop "$m" "$dev"
				fi
				losetup -d "$dev"
			else
				skip_target loop "$m" "losetup failed: $(cat "$OUT/err")"
			fi;;
		loopmq|loopmq-dio-off|loopmq-dio-auto)
			dio=on
			[ "$t" = loopmq-dio-off ] && dio=off
			[ "$t" = loopmq-dio-auto ] && dio=auto
			# attached with the other setting: attach anew
			[ -n "$LOOPMQ_DIO" ] && [ "$LOOPMQ_DIO" != $dio ] && loopmq_down
			if [ -z "$LOOPMQ_DEV" ] && [ -z "$LOOPMQ_WHY" ]; then
				loopmq_up $dio
			fi
			if [ -z "$LOOPMQ_DEV" ]; then
				skip_target "$t" "$m" "$LOOPMQ_WHY"
			elif ! loopmq_set_mode "$m"; then
				skip_target "$t" "$m" "cannot set mode $m via sysfs"
			else
				run_target "$t" "$m" "$LOOPMQ_DEV"
			fi;;
		null_blk)
			run_target null_blk "" "$BACKDEV";;
		esac
		# Dirty: what a buffered target left unwritten (image_state writes it back)
		[ -n "$FRESH" ] && log "after $tm: dirty $(awk '$1 == "Dirty:" { print $2 }' /proc/meminfo) KiB; $(image_state "$BACKDEV")"
	done
	loopmq_down
}

teardown() {
	loopmq_down
	dm_linear_down
	dm_mpath_down
	upper_down
	losetup -D >/dev/null 2>&1
	mountpoint -q $MNT 2>/dev/null && umount $MNT
	[ -d $NULLB_CFG ] && for d in $NULLB_CFG/*/; do
		[ -d "$d" ] && { echo 0 >"$d/power"; rmdir "$d"; }
	done 2>/dev/null
	rmmod dm_round_robin dm_multipath brd null_blk loop >/dev/null 2>&1
	rm -f /tmp/bench-image
	true
}

main() {
	local ok=1
	mkdir -p "$OUT"
	: >>"$RUNS"
	write_snap_helper
	log "group $GROUP on $(uname -r), targets: $TARGETS; workloads: $WORKLOADS"
	local free
	free=$(awk '$1 == "HugePages_Free:" { print $2 }' /proc/meminfo)
	if [ "${free:-0}" -lt "$HUGEPAGES" ]; then
		log "only ${free:-0} of $HUGEPAGES hugetlb pages free (hugepages= on the kernel command line)"
		ok=0
	fi
	[ $ok = 1 ] && case $GROUP in
	null_blk)
		BACKING=null_blk
		setup_nullb_module && BACKDEV=$(nullb_new floor 0 0 0 "$SIZE_MB") &&
			udev_wait "$BACKDEV" || ok=0;;
	ram|lat10us|nullb-mem)
		BACKING=$GROUP
		setup_raw "$GROUP" && BACKDEV=$RAWDEV && prefill "$BACKDEV" || ok=0;;
	xfs-file|ext4-file)
		BACKING=$GROUP RAW=ram
		setup_raw ram && setup_fs "${GROUP%-file}" || ok=0;;
	xfs-file-ext4|xfs-file-ext4-discard)
		BACKING=$GROUP RAW=ram UPPER=nodiscard
		[ "$GROUP" = xfs-file-ext4-discard ] && UPPER=discard
		setup_raw ram && setup_fs xfs || ok=0;;
	xfs-pinned|ext4-pinned)
		BACKING=$GROUP RAW=ram PIN=1
		setup_raw ram && setup_fs "${GROUP%-pinned}" || ok=0;;
	xfs-sparse|xfs-reflink|xfs-filling)
		BACKING=$GROUP RAW=ram
		setup_raw ram && setup_fresh "${GROUP#xfs-}" || ok=0;;
	tmpfs-file)
		BACKING=$GROUP
		BACKDEV=/tmp/bench-image
		prefill "$BACKDEV" || ok=0;;
	esac
	if [ $ok = 1 ]; then
		run_targets
	else
		local tm
		log "setup of $GROUP failed"
		for tm in $TARGETS; do
			local t=${tm%%:*} m=""
			[ "$t" != "$tm" ] && m=${tm#*:}
			skip_target "$t" "$m" "setup of $GROUP failed"
		done
	fi
	teardown
	log "group $GROUP done after $(( $(date +%s) - T_START ))s guest time"
	return 0
}
