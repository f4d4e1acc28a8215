#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200
# Experiment (not a test): how deep do loopmq's inline calls go where the
# stack is deep?  loopmq with stack_probe=1 (default stack_reserve), and per
# situation the deepest inline call below queue_rq (used_max), the deepest
# entry into queue_rq (entry_max) and their sum, from
# /sys/block/loopmqN/loopmq/stack (docs/BENCHMARKS.md, "Inline stack depth"):
#   tests/vm/run --kernel 6.12 --rev HEAD --outdir DIR bench/experiments/stack-depth.sh
# (a) ext4/xfs on loopmq over an image on xfs/ext4: buffered writes with
#     fsync, O_DIRECT writes, file creation with fsync, fstrim, cold reads,
#     background writeback and sync; dio on/off x modes direct, aio, auto
# (b) the same under memory pressure: a memory cgroup (memory.max) around
#     the writer, and a memory hog (tmpfs filled to all but ~200 MiB)
# (c) three loopmq levels, each on an image file on a file system on the next
# (d) loopmq over stock loop (/dev/loop0) and over dm-linear
# Prints one "stack:" line per device and situation, and the table in
# /out/stack-depth-<kernel>.txt.  sd_parts=a,b on the kernel command line
# (--append) runs only those parts.
DESCRIPTION="how deep loopmq's inline calls go where the stack is deep (an experiment)"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	grep -q ' kasan_report$' /proc/kallsyms && skip_all "no stack probe on KASAN kernels"
	require_cmd fio mkfs.ext4 mkfs.xfs dmsetup fstrim
}
GROUP=stack-depth
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh	# before guest.sh, whose PATH and set -u then hold
. /tests/lib/guest.sh
DM_NAME=lmqlin
exec 2>&1

K=$(uname -r | cut -d. -f1,2)
PARTS=$(sed -n 's/.*sd_parts=\([a-d,]*\).*/\1/p' /proc/cmdline)
PARTS=${PARTS:-a,b,c,d}
want() { [[ ,$PARTS, == *,$1,* ]]; }
TABLE=/out/stack-depth-$K.txt
mkdir -p /out
printf '%-5s %-26s %-6s %-3s %8s %9s %6s %11s %7s %6s %8s\n' kernel situation mode dio \
	used_max entry_max sum thread_size inline aio fb_stack | tee "$TABLE"

check "load loopmq with the stack probe" lmq_load 3 stack_probe=1
diag "stack_reserve $(cat /sys/module/loopmq/parameters/stack_reserve), $(uname -r)"
# The flusher writes back early and often: its kworker is an entry path too.
sysctl -qw vm.dirty_background_bytes=1048576 vm.dirty_expire_centisecs=100 \
	vm.dirty_writeback_centisecs=100

mkfs_() {	# mkfs_ FS DEV
	case $1 in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$2" >/dev/null;;
	xfs) mkfs.xfs -q -f -K "$2" >/dev/null;;
	esac
}
mnt() {	# mnt FS DEV DIR: mkfs and mount
	mkdir -p "$3" && mkfs_ "$1" "$2" && mount -t "$1" "$2" "$3"
}

# row SITUATION N MODE DIO: print device N's probe and counters
row() {
	local s=/sys/block/loopmq$2/loopmq used entry tsz c
	used=$(awk '$1 == "used_max" { print $2 }' $s/stack)
	entry=$(awk '$1 == "entry_max" { print $2 }' $s/stack)
	tsz=$(awk '$1 == "thread_size" { print $2 }' $s/stack)
	c=$(awk '{ v[$1] = $2 } END { print v["inline"], v["aio_inline"] + v["aio_async"], v["fb_stack"] }' $s/stats)
	set -- "$1" "$2" "$3" "$4" $c
	printf '%-5s %-26s %-6s %-3s %8s %9s %6s %11s %7s %6s %8s\n' "$K" "$1" "$3" "$4" \
		"$used" "$entry" $((used + entry)) "$tsz" "$5" "$6" "$7" | tee -a "$TABLE"
	echo "stack: $K $1 loopmq$2 t=$SECONDS mode=$3 dio=$4 used_max=$used entry_max=$entry thread_size=$tsz $(tr '\n' ' ' <$s/stats)" >>/out/stack-depth-$K.log
}

# setmode MODE DIO N...: mode and direct I/O of devices N, counters reset
setmode() {
	local m=$1 d=$2 n
	shift 2
	for n; do
		losetup --direct-io="$d" /dev/loopmq$n || fail "loopmq$n: dio=$d"
		lmq_mode "$n" "$m" || fail "loopmq$n: mode $m"
	done
	sync
	for n; do echo 0 >/sys/block/loopmq$n/loopmq/stats; done
}

# work DIR: the upper file system's workload.  fstrim first (its discards
# punch holes in the image: the lower file system allocates again), then
# buffered random writes with fsync, O_DIRECT writes to a new file
# (allocating in both file systems), O_DIRECT overwrites of the first file
# (blocks the lower file system has: NOWAIT succeeds), 32 small files
# created and fsynced; sync, caches dropped, cold buffered reads (readahead:
# its NOFS scope sends them to the kthread, fb_journal), O_DIRECT reads and
# a metadata walk; sync.  The flusher runs throughout (dirty_background
# 1 MiB, expiry 1 s).
SIZE=${SIZE:-8M}
work() {
	rm -rf "$1/w"; mkdir -p "$1/w"
	fstrim "$1" 2>/dev/null
	fio --output=/dev/null --eta=never --directory="$1/w" --ioengine=psync \
		--bsrange=4k-64k --size="$SIZE" \
		--name=bw --rw=randwrite --fsync=8 --end_fsync=1 --filename=a \
		--name=dw --stonewall --rw=randwrite --direct=1 --bsrange=4k-128k --filename=b \
		--name=ow --stonewall --rw=randwrite --direct=1 --filename=a \
		--name=meta --stonewall --rw=write --bs=4k --nrfiles=32 --filesize=8k \
		--size=256k --fsync_on_close=1 ||
		fail "fio writes in $1"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	fio --output=/dev/null --eta=never --directory="$1/w" --ioengine=psync \
		--name=rd --rw=read --bs=128k --size="$SIZE" --filename=a:b \
		--name=dr --stonewall --rw=randread --direct=1 --bsrange=4k-128k \
		--size="$SIZE" --filename=a ||
		fail "fio reads in $1"
	ls -lR "$1" >/dev/null
	sync
}

umount_all() {	# umount_all DIR...: innermost first
	local d
	for d; do mountpoint -q "$d" && { umount "$d" || fail "umount $d"; }; done
}

MODES="direct aio auto"
sweep() {	# sweep SITUATION DIR: loopmq0 in every mode, dio on and off
	local dio m
	for dio in on off; do
		for m in $MODES; do
			setmode "$m" "$dio" 0
			work "$2"
			row "$1" 0 "$m" "$dio"
		done
	done
}
t0=$SECONDS

# ---- (a) upper file system over an image on a lower file system -----------
if want a; then
for lower in xfs ext4; do
	for upper in ext4 xfs; do
		s="a:$upper/lmq/$lower"
		mnt "$lower" /dev/vda /mnt/lo || { fail "$s: lower"; continue; }
		truncate -s 512M /mnt/lo/img
		losetup /dev/loopmq0 /mnt/lo/img || { fail "$s: attach"; umount /mnt/lo; continue; }
		if mnt "$upper" /dev/loopmq0 /mnt/up; then
			sweep "$s" /mnt/up
		else
			fail "$s: upper"
		fi
		umount_all /mnt/up
		losetup -d /dev/loopmq0
		umount_all /mnt/lo
	done
done
diag "part a: $((SECONDS - t0)) s"
fi

# ---- (b) memory pressure ---------------------------------------------------
# b:memcg  the writer in a memory cgroup with memory.max=32M: the lower file
#          system's page cache, allocated in the writer's inline calls, is
#          charged to it (dio off), so those calls reclaim (memcg reclaim)
# b:hog    tmpfs (no swap: unreclaimable) filled up to ~240 MiB of
#          MemAvailable, and 160 MiB more allocated and freed in a loop
#          (fallocate/rm) while the writer runs: free memory stays at the
#          watermarks and the writer's allocations reclaim (direct reclaim)
vm() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
if want b; then
t1=$SECONDS
mkdir -p /sys/fs/cgroup
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/lmq
echo 32M >/sys/fs/cgroup/lmq/memory.max
mnt xfs /dev/vda /mnt/lo && truncate -s 768M /mnt/lo/img &&
	losetup /dev/loopmq0 /mnt/lo/img && mnt ext4 /dev/loopmq0 /mnt/up ||
	fail "b: setup"
for m in direct auto aio; do
	setmode "$m" off 0
	st0=$(awk '$1 == "pgscan" || $1 == "pgscan_direct" { printf "%s ", $2 }' /sys/fs/cgroup/lmq/memory.stat)
	(
		echo $BASHPID >/sys/fs/cgroup/lmq/cgroup.procs
		fio --output=/dev/null --eta=never --filename=/mnt/up/big --ioengine=psync \
			--name=bw --rw=randwrite --bsrange=4k-64k --size=96M --io_size=32M --fsync=16
		SIZE=16M work /mnt/up
	) || fail "b:memcg $m: writer"
	diag "memcg $m: memory.events $(tr '\n' ' ' </sys/fs/cgroup/lmq/memory.events); pgscan pgscan_direct before ${st0}after $(awk '$1 == "pgscan" || $1 == "pgscan_direct" { printf "%s ", $2 }' /sys/fs/cgroup/lmq/memory.stat)"
	row "b:memcg32M:ext4/lmq/xfs" 0 "$m" off
	rm -f /mnt/up/big
done
# the global hog
sync; echo 3 >/proc/sys/vm/drop_caches
avail=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
hog=$((avail - 240))
mkdir -p /mnt/hog && mount -t tmpfs -o size=$((hog + 200))M tmpfs /mnt/hog &&
	fallocate -l ${hog}M /mnt/hog/hog || fail "b:hog: fallocate ${hog}M"
diag "hog: ${hog} MiB of tmpfs, MemAvailable now $(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo) MiB"
while :; do fallocate -l 160M /mnt/hog/churn; rm -f /mnt/hog/churn; done &
churn=$!
for m in direct auto aio; do
	setmode "$m" off 0
	a0=$(vm allocstall_normal) a1=$(vm allocstall_dma32) p0=$(vm pgscan_direct)
	fio --output=/dev/null --eta=never --filename=/mnt/up/big --ioengine=psync \
		--name=bw --rw=randwrite --bsrange=4k-64k --size=256M --io_size=64M --fsync=16 ||
		fail "b:hog $m: writer"
	SIZE=16M work /mnt/up
	diag "hog $m: allocstall +$(( $(vm allocstall_normal) + $(vm allocstall_dma32) - a0 - a1 )), pgscan_direct +$(( $(vm pgscan_direct) - p0 ))"
	row "b:hog:ext4/lmq/xfs" 0 "$m" off
	rm -f /mnt/up/big
done
kill $churn; wait $churn 2>/dev/null
rm -f /mnt/hog/*; umount /mnt/hog
umount_all /mnt/up
losetup -d /dev/loopmq0
umount_all /mnt/lo
rmdir /sys/fs/cgroup/lmq
diag "part b: $((SECONDS - t1)) s"
fi

# ---- (c) three levels ---------------------------------------------------------
# vda: xfs <- img0 <- loopmq0: ext4 <- img1 <- loopmq1: xfs <- img2 <-
# loopmq2: ext4 (the workload).  loopmq1 and loopmq0 see loopmq2's and
# their own kthreads' I/O as nested (kthread); they run inline only for
# writeback, journal and sync I/O of the file systems on them.
if want c; then
t1=$SECONDS
mnt xfs /dev/vda /mnt/l0 && truncate -s 1200M /mnt/l0/img &&
	losetup /dev/loopmq0 /mnt/l0/img && mnt ext4 /dev/loopmq0 /mnt/l1 &&
	truncate -s 600M /mnt/l1/img && losetup /dev/loopmq1 /mnt/l1/img &&
	mnt xfs /dev/loopmq1 /mnt/l2 && truncate -s 300M /mnt/l2/img &&
	losetup /dev/loopmq2 /mnt/l2/img && mnt ext4 /dev/loopmq2 /mnt/l3 ||
	fail "c: setup"
for dio in on off; do
	for m in $MODES; do
		setmode "$m" "$dio" 2 1 0
		work /mnt/l3
		row "c:3lvl-top:loopmq2" 2 "$m" "$dio"
		row "c:3lvl-mid:loopmq1" 1 "$m" "$dio"
		row "c:3lvl-bottom:loopmq0" 0 "$m" "$dio"
	done
done
umount_all /mnt/l3; losetup -d /dev/loopmq2
umount_all /mnt/l2; losetup -d /dev/loopmq1
umount_all /mnt/l1; losetup -d /dev/loopmq0
umount_all /mnt/l0
diag "part c: $((SECONDS - t1)) s"
fi

# ---- (d) over stock loop and dm-linear ------------------------------------------
if want d; then
t1=$SECONDS
mnt xfs /dev/vda /mnt/lo && truncate -s 512M /mnt/lo/img &&
	LOOP=$(loop_up /mnt/lo/img on) &&
	losetup /dev/loopmq0 "$LOOP" && mnt ext4 /dev/loopmq0 /mnt/up ||
	fail "d:loop: setup"
sweep "d:ext4/lmq/loop0/xfs" /mnt/up
umount_all /mnt/up; losetup -d /dev/loopmq0; losetup -d "$LOOP"
umount_all /mnt/lo
DM=$(dm_linear_up /dev/vda) &&
	losetup /dev/loopmq0 "$DM" && mnt xfs /dev/loopmq0 /mnt/up ||
	fail "d:dm: setup"
sweep "d:xfs/lmq/dm-linear" /mnt/up
umount_all /mnt/up; losetup -d /dev/loopmq0
dm_linear_down
diag "part d: $((SECONDS - t1)) s"
fi

diag "total: $((SECONDS - t0)) s"
awk 'NR > 1 { if ($5 > u) { u = $5; us = $2 " " $3 " " $4 } if ($6 > e) { e = $6; es = $2 " " $3 " " $4 }
	if ($7 > t) { t = $7; ts = $2 " " $3 " " $4 } }
	END { printf "# max used_max %d (%s), max entry_max %d (%s), max sum %d (%s)\n", u, us, e, es, t, ts }' "$TABLE" |
	tee -a "$TABLE"
pass "measured ($(grep -c "^[0-9]" "$TABLE") rows)"
done_testing
