#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# 70-signal-storm: a signal sent to a task that submits I/O to the device
# never fails that I/O.  When the backing file's I/O runs inline in the
# submitter's task (modes direct, aio, auto), buffered reads and writes of
# the backing file end early (-EINTR, or a short count and then -EINTR)
# once that task has a fatal signal pending; the old code completed such a
# request with BLK_STS_IOERR ("I/O error, dev loopmq0 ... op 0x1:(WRITE)").
# The fixed module runs nothing inline for a submitter with a signal
# pending and hands the rest of an interrupted inline call to its kthread
# (fallback reason fb_signal).
#
# Cells lower:dio:upper: the backing file on tmpfs, or on ext4 or xfs on
# /dev/vda, direct I/O off or on, under ext4 or xfs on the device:
# tmpfs:off:ext4 (the reported case), tmpfs:on:xfs (tmpfs has no O_DIRECT
# before 6.6: skipped on 6.1; on 6.12 its "direct I/O" is buffered),
# ext4:off:ext4, ext4:off:xfs, ext4:on:xfs, xfs:off:xfs, xfs:on:ext4.  Each
# cell: a fresh image (a copy of a file system made once: sparse but for
# its metadata), mounted; in every mode (switched live) a storm of 8 kills
# (fewer in kthread mode, which never runs I/O in the submitter, and over
# ext4/xfs with direct I/O on, a path without signal checks), each of a
# process started in the background:
#   dwrite  dd bs=64k count=2000 oflag=direct (4 of the 8)
#   fwrite  dd bs=64k count=96 conv=fsync, killed in its fsync (after all
#           its write()s returned): the writeback then runs in the killed
#           task (on xfs; ext4 writes back inside a journal handle, which
#           loopmq never runs inline) (2 of 8)
#   dread   dd bs=64k iflag=direct of a cold 8 MiB region (1 of 8)
#   bread   cat of 26 cold files of 16 KiB (1 of 8): its readahead runs in
#           a NOFS scope, which loopmq hands to the kthread, so it is
#           coverage more than a trigger
# once it does I/O (read_bytes / write_bytes in /proc/PID/io; for fwrite:
# wchar complete), a random 0-15 ms, then SIGKILL, or SIGINT for one kill
# in five (dd catches it; cat dies of it).  The debug kernel runs three
# cells, each mode once, 6 kills per mode.
# Pass: per cell and mode, the device's `errors` counter did not move and
# the upper file system is not read-only; per cell, no "error, dev loopmq0"
# or "I/O error on dev loopmq0" line in dmesg, no read-only remount or
# shutdown there, at least a third of the processes were still running when
# signalled (on the debug kernel the short readers and fsyncs over tmpfs
# often finish first), and after umount e2fsck -fn / xfs_repair -n find it clean.
# fb_signal, when the module has it, is summed over the cells and must be
# above 0 (not on lockdep kernels, where the lockdep guard, checked
# first, takes the requests of submitters holding locks): submitters
# were killed with requests to submit, and those went to the kthread
# before any call.  (With the guard gone, the hand-off of the calls the
# signal interrupted, counted as fb_interrupted, alone keeps the errors
# away: only the guard's own counter shows it.)
#
# The old code (5a6ccec), 6.12, 4 runs (40-80 s each, by the host's
# load): direct mode failed in every dio-off cell and in tmpfs:on:xfs, in
# every run (1-4 errors; 7-9 in ext4:off:xfs, where each request of a
# killed fsync's writeback fails); auto in tmpfs:off:ext4 in 4 of 4 (2-3
# errors); aio in ext4:off:ext4 in 1 of 4, aio and auto in xfs:off:xfs in
# 3 of 4 (1-2); never kthread mode, nor ext4/xfs with direct I/O on.  The
# upper file systems never went read-only and fsck'd clean: the errors
# hit file data.  The fixed code (323f864; HEAD 630df58; 6.1 too): 0
# errors, fb_signal 37-55 per run.
DESCRIPTION="signals killing I/O submitters: no I/O error, clean file systems"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b "${SCRATCH:-/dev/vda}" ] || skip_all "no scratch disk"
	require_cmd mkfs.ext4 mkfs.xfs e2fsck xfs_repair
}
. /tests/lib/guest.sh

debug=$LMQ_SLOW
ITER=8
[ $debug = 1 ] && ITER=6
# the kill delays are random: t70_seed=N on the kernel command line
# (tests/vm/run --append) repeats the delays (not the races' outcomes)
SEED=$(sed -n 's/.*t70_seed=\([0-9]*\).*/\1/p' /proc/cmdline)
SEED=${SEED:-$(($(date +%s%N) % 32768))}
RANDOM=$SEED
# lower:dio:upper:modes ("all" = $LMQ_MODES)
if [ $debug = 0 ]; then
	CELLS="tmpfs:off:ext4:all tmpfs:on:xfs:all ext4:off:ext4:all ext4:off:xfs:all
	       ext4:on:xfs:all xfs:off:xfs:all xfs:on:ext4:all"
else
	CELLS="tmpfs:off:xfs:auto,direct ext4:off:ext4:aio xfs:off:xfs:kthread"
fi
diag "seed $SEED, $ITER kills per mode and cell"

M=/mnt/t70 UP=/mnt/t70/up V=${SCRATCH:-/dev/vda}
mkdir -p $M/tmpfs $M/vda $UP
mkfifo /tmp/t70.fifo && exec {nop}<>/tmp/t70.fifo	# read -t on it: a builtin sleep
msleep() { read -r -t "$1" -u $nop; }
cleanup() {	# idempotent; also on an early exit
	mountpoint -q $UP && umount $UP
	[ -e "$(lmq_sys 0)/loop/backing_file" ] && $LOSETUP -d "$(lmq_dev 0)"
	mountpoint -q $M/vda && umount $M/vda
	mountpoint -q $M/tmpfs && umount $M/tmpfs
	rm -f /tmp/t70.fifo /tmp/t70.ext4 /tmp/t70.xfs /tmp/t70.err
}
trap cleanup EXIT
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0) NAME=${LMQ_NAME}0
HAVE_FBS=0
lmq_is_mq && grep -q '^fb_signal ' $S/loopmq/stats && HAVE_FBS=1
ERR=0
errs() {	# ERR = the device's errors counter (0 for the stock driver)
	local k v
	ERR=0
	lmq_is_mq || return 0
	while read -r k v; do [ "$k" = errors ] && ERR=$v; done <$S/loopmq/stats
}
fbs_total=0

# ---- file systems ---------------------------------------------------------
# UUIDs and ext4's hash seed given: where the guest's CRNG is not ready
# (tests/vm/run boots with RDRAND trusted, so it is there), libuuid sleeps
# 125 ms per getrandom() attempt (mkfs.ext4 4 s, 0.2 s with these)
U_LE=70700000-0000-4000-8000-000000000001 U_LX=70700000-0000-4000-8000-000000000002
U_UE=70700000-0000-4000-8000-000000000003 U_UX=70700000-0000-4000-8000-000000000004
E4OPT=nodiscard,lazy_itable_init=1,lazy_journal_init=1,hash_seed=70700000-0000-4000-8000-000000000005
lower_cur='' LDIR=''
lower() {	# lower tmpfs|ext4|xfs: make it; LDIR = the image's directory
	local l=$1
	if [ "$l" = tmpfs ]; then
		mountpoint -q $M/tmpfs || mount -t tmpfs -o size=400M t70 $M/tmpfs || return 1
		LDIR=$M/tmpfs; return 0
	fi
	if [ "$lower_cur" != "$l" ]; then
		mountpoint -q $M/vda && { umount $M/vda || return 1; }
		lower_cur=
		case $l in
		ext4) mkfs.ext4 -q -F -U $U_LE -E $E4OPT $V 768M >/dev/null &&
			mount -o noinit_itable $V $M/vda ;;
		xfs) mkfs.xfs -q -f -K -m uuid=$U_LX -d size=768m $V >/dev/null &&
			mount $V $M/vda ;;
		esac || return 1
		lower_cur=$l
	fi
	LDIR=$M/vda
}

# ---- the storm -----------------------------------------------------------
IO_rb=0 IO_wb=0 IO_wc=0
# Without task I/O accounting (the debug kernel: no /proc/PID/io) the file
# offsets stand in: dd writes fd 1 and reads fd 0, cat reads fd 3.
fdpos() {	# fdpos PID FD: that descriptor's file offset, 0 if none
	local k v
	{ while read -r k v; do
		[ "$k" = pos: ] && { echo "$v"; return; }
	done </proc/$1/fdinfo/$2; } 2>/dev/null
	echo 0
}
ioget() {	# ioget PID: IO_rb, IO_wb, IO_wc of /proc/PID/io
	local k v
	IO_rb=0 IO_wb=0 IO_wc=0
	if [ -r /proc/self/io ]; then
		{ while read -r k v; do
			case $k in
			read_bytes:) IO_rb=$v ;; write_bytes:) IO_wb=$v ;; wchar:) IO_wc=$v ;;
			esac
		done </proc/$1/io; } 2>/dev/null
	else
		IO_wc=$(fdpos "$1" 1) IO_wb=$IO_wc
		IO_rb=$(( $(fdpos "$1" 0) + $(fdpos "$1" 3) ))
	fi
}
# one KIND: start it, wait until it does I/O, a random 0-15 ms, a signal.
# Counts into K_sent (signalled while running), K_int, K_early (finished
# or failed before the signal: not a kill).
K_sent=0 K_int=0 K_early=0 NDREAD=0 NBREAD=0 SETS=abcde
declare -A K_err
# bgrun CMD...: CMD in the background, $! its pid, SIGINT not ignored (bash
# ignores it in asynchronous commands; env --default-signal costs an exec)
bgrun() { (trap - INT; exec "$@" >/dev/null 2>&1) & }
G=0
one() {
	local kind=$1 sig=KILL p ready=0 i ms e0
	errs; e0=$ERR
	G=$((G + 1))
	[ $((G % 5)) = 0 ] && sig=INT	# one in five, rotating over the kinds
	case $kind in
	dwrite) bgrun dd if=/dev/zero of=$UP/dw bs=64k count=2000 oflag=direct status=none ;;
	fwrite) bgrun dd if=/dev/zero of=$UP/fw bs=64k count=96 conv=fsync status=none ;;
	dread) bgrun dd if=$UP/big of=/dev/null bs=64k iflag=direct status=none \
			skip=$((NDREAD % 4 * 128)) count=128
		NDREAD=$((NDREAD + 1)) ;;
	bread) bgrun cat $UP/s/${SETS:NBREAD % 5:1}*
		NBREAD=$((NBREAD + 1)) ;;
	esac
	p=$!
	for ((i = 0; i < 4000; i++)); do	# ~4 s at most
		ioget $p
		case $kind in
		fwrite) [ "$IO_wc" -ge $((96 << 16)) ] && ready=1 ;;
		dwrite) [ "$IO_wb" -gt 0 ] && ready=1 ;;
		*) [ "$IO_rb" -gt 0 ] && ready=1 ;;
		esac
		[ $ready = 1 ] && break
		alive $p || break
		msleep 0.001
	done
	if [ $ready = 1 ]; then
		printf -v ms '0.%03d' $((RANDOM % 16))
		msleep $ms
	fi
	if alive $p; then
		kill -$sig $p 2>/dev/null
		K_sent=$((K_sent + 1))
		[ $sig = INT ] && K_int=$((K_int + 1))
	else
		K_early=$((K_early + 1))
	fi
	wait $p 2>/dev/null
	errs; K_err[$kind]=$((${K_err[$kind]:-0} + ERR - e0))
	return 0
}
KINDS=(dwrite fwrite dwrite dread dwrite bread dwrite fwrite)
# kills per mode: kthread mode never runs the backing's I/O in the
# submitter, and direct I/O on ext4/xfs takes no signals: fewer there
iters() {	# iters LOWER DIO MODE
	local k=$ITER
	[ "$3" = kthread ] && k=$(((ITER + 2) / 3))
	[ "$2" = on ] && [ "$1" != tmpfs ] && k=$(((k + 1) / 2))
	[ $k -lt 2 ] && k=2
	echo $k
}
# drop_caches logs a line every time, until someone writes 4 to it
echo 4 >/proc/sys/vm/drop_caches

ro_now() {	# is the upper file system mounted read-only?
	local mp o
	while read -r _ mp _ o _; do
		[ "$mp" = "$UP" ] || continue
		[[ ,$o, == *,ro,* ]] && return 0
	done </proc/mounts
	return 1
}

# ---- the cells -----------------------------------------------------------
# the upper file systems, made once (mkfs is slow under TCG) and copied
# into each cell's image: a sparse file but for their metadata
truncate -s 128M /tmp/t70.ext4 && truncate -s 320M /tmp/t70.xfs &&
	mkfs.ext4 -q -F -U $U_UE -E $E4OPT /tmp/t70.ext4 >/dev/null &&
	mkfs.xfs -q -f -K -m uuid=$U_UX /tmp/t70.xfs >/dev/null ||
	{ fail "mkfs of the upper file systems"; stop_testing; }
n=0
for cell in $CELLS; do
	IFS=: read -r lo dio up modes <<<"$cell"
	[ "$modes" = all ] && modes=$LMQ_MODES
	modes=${modes//,/ }
	n=$((n + 1))
	tag="$lo/dio-$dio $up"
	lower $lo || { fail "$tag: $lo on the scratch disk"; continue; }
	img=$LDIR/img
	rm -f $img
	cp --sparse=always /tmp/t70.$up $img || { fail "$tag: image"; continue; }
	if ! $LOSETUP --direct-io=$dio $D $img 2>/tmp/t70.err ||
		[ "$(cat $S/loop/dio 2>/dev/null)" != "$([ $dio = on ] && echo 1 || echo 0)" ]; then
		if [ $lo = tmpfs ] && [ $dio = on ]; then
			skip "$tag" "tmpfs has no O_DIRECT on $(uname -r)"
		else
			fail "$tag: attach with direct I/O $dio" "$(head -c 200 /tmp/t70.err)"
		fi
		$LOSETUP -d $D 2>/dev/null
		lmq_wait_gone $S/loop/backing_file 30
		rm -f $img
		continue
	fi
	case $up in
	ext4) mount -o noinit_itable $D $UP ;;
	xfs) mount $D $UP ;;
	esac || { fail "$tag: mount $up on $NAME"; $LOSETUP -d $D; continue; }
	# what the readers read, cold (out of the page cache, the upper file
	# system's and the backing's): 4 x 8 MiB for dread, 5 sets of 16 KiB
	# files for bread (s/a* .. s/e*), each read once (one drop_caches per
	# cell: it takes ~0.3 s here)
	mkdir $UP/s &&
		dd if=/dev/zero of=$UP/big bs=1M count=32 status=none &&
		head -c 2M /dev/zero | split -b 16k -a 2 - $UP/s/ && sync &&
		echo 1 >/proc/sys/vm/drop_caches || fail "$tag: reader data"
	NDREAD=0 NBREAD=0
	echo "t70: cell $n" >/dev/kmsg
	f0=$(lmq_stat0 0 fb_signal) fi0=$(lmq_stat0 0 fb_interrupted) c0=$(date +%s%N) c_sent=0 c_all=0
	for mode in $modes; do
		lmq_mode 0 $mode || { fail "$tag $mode: set mode"; continue; }
		e0=$(lmq_stat0 0 errors)
		K_sent=0 K_int=0 K_early=0 K_err=()
		nk=$(iters $lo $dio $mode)
		for ((i = 0; i < nk; i++)); do
			one ${KINDS[i % ${#KINDS[@]}]}
		done
		e1=$(lmq_stat0 0 errors)
		c_sent=$((c_sent + K_sent)) c_all=$((c_all + nk))
		ro=
		ro_now && ro=", file system read-only"
		if [ "$e1" = "$e0" ] && [ -z "$ro" ]; then
			pass "$tag $mode: $K_sent signals ($K_int SIGINT, $K_early too late), 0 errors"
		else
			fail "$tag $mode: $K_sent signals ($K_int SIGINT, $K_early too late)" \
				"$((e1 - e0)) errors$ro"
			diag "  errors by kind: $(for k in dwrite fwrite dread bread; do printf '%s %s ' $k ${K_err[$k]:-0}; done)"
		fi
	done
	f1=$(lmq_stat0 0 fb_signal) fi1=$(lmq_stat0 0 fb_interrupted)
	fbs_total=$((fbs_total + f1 - f0))
	ro=$(ro_now && echo "read-only")
	sync
	umount $UP || fail "$tag: umount"
	log=$(dmesg | awk -v m="t70: cell $n" 'f; index($0, m) { f = 1 }')
	ioe=$(grep -E "error,? (on )?dev $NAME\b" <<<"$log")
	rol=$(grep -iE "read-only|shut ?down|aborting journal|aborted journal|EXT4-fs error|metadata I/O error" <<<"$log")
	case $up in
	ext4) fsck=$(e2fsck -fn $D 2>&1) ;;
	xfs) fsck=$(xfs_repair -n $D 2>&1) ;;
	esac
	frc=$?
	secs=$((($(date +%s%N) - c0) / 1000000000))
	# a storm whose signals mostly came too late proves nothing
	if [ $((c_sent * 3)) -lt $c_all ]; then
		fail "$tag: the signals landed" "only $c_sent of $c_all processes were still running"
	fi
	if [ -z "$ioe" ] && [ -z "$rol" ] && [ -z "$ro" ] && [ $frc = 0 ]; then
		pass "$tag: no I/O error in dmesg, never read-only, $up clean after the storm (${secs}s, fb_signal +$((f1 - f0)), fb_interrupted +$((fi1 - fi0)))"
	else
		why=
		[ -n "$ioe" ] && why+="$(grep -c . <<<"$ioe") I/O error lines; "
		[ -n "$rol" ] || [ -n "$ro" ] && why+="read-only/shutdown; "
		[ $frc = 0 ] || why+="fsck exit $frc"
		fail "$tag: no I/O error, never read-only, $up clean after the storm" "$why"
		{ head -n 5 <<<"$ioe"; head -n 5 <<<"$rol"; [ $frc = 0 ] || tail -n 8 <<<"$fsck"; } |
			grep . | sed 's/^/#   /'
	fi
	$LOSETUP -d $D || fail "$tag: detach"
	lmq_wait_gone $S/loop/backing_file 30
	rm -f $img
done

if lmq_is_mq; then
	if [ $HAVE_FBS = 1 ]; then
		pass "stats has fb_signal"
		if [ -e /proc/lockdep ]; then	# the lockdep guard comes first there
			diag "fb_signal over all cells: $fbs_total (a lockdep kernel: fb_lockdep takes them)"
		else
			check "submitters with a signal pending did not run their requests (fb_signal over all cells: $fbs_total)" \
				test "${fbs_total:-0}" -gt 0
		fi
	else
		diag "no fb_signal in $S/loopmq/stats (a module without the fallback)"
	fi
fi
exec {nop}>&-
cleanup 2>/dev/null
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

