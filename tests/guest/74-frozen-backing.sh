#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# 74-frozen-backing: a frozen backing file system must never block the task
# that submits I/O to the device inside queue_rq when that submission was
# meant not to block.
#
# Set-up: ext4 and xfs side by side on /dev/vda (two dm-linear halves),
# six devices on fully written 8 MiB images: on ext4 with direct I/O on,
# on xfs with direct I/O off (buffered), each in modes direct, aio and
# auto.  These cover the distinct paths: the synchronous inline call
# (direct mode), NOWAIT aio with direct I/O (ext4) and buffered NOWAIT aio
# (xfs takes NOWAIT buffered writes; ext4 does not, so over buffered ext4
# aio mode hands every write to the kthread, and that kthread path is
# already covered by the REQ_NOWAIT requests of direct mode).  Region B
# (the first MiB) is read once through each device, then both file
# systems are frozen (fsfreeze) and, at the same time, on every device: a
# dd oflag=direct writer, and one fio (--thread) with a libaio job
# (iodepth 16, all 16 in one io_submit: the submitter's plug is flushed by
# io_submit itself, so queue_rq runs in fio's thread) and an io_uring job
# (iodepth 16: io_uring issues O_DIRECT block-device writes with
# REQ_NOWAIT from the submitting thread), each on its own region.  While
# frozen, ~2 s of samples of the kernel stacks (/proc/PID/task/*/stack) of
# every writer; a thread is told apart by its system call (write,
# io_submit/io_getevents, io_uring_enter).
#
# What is asserted, and why:
# - "not blocked in queue_rq": a writer counts as blocked when
#   loopmq_queue_rq is on the stack of its thread (below its system call:
#   io_uring's iou-wrk workers, which are meant to block, do not count) in
#   at least half of the samples.  A writer that merely passes through
#   queue_rq shows up in a sample or two at most, one waiting for the
#   freeze in every sample.  The old code (5a6ccec) blocked there in every
#   asserted cell: NOWAIT aio took freeze protection with a blocking
#   sb_start_write() (kiocb_start_write()), and direct mode made its
#   synchronous call (file_start_write()) for REQ_NOWAIT requests too.
#   Asserted for:
#   * io_uring, in every mode: its requests carry REQ_NOWAIT, so the
#     driver must either use NOWAIT aio (whose freeze protection is a
#     trylock) or hand the request to its kthread; a blocking call in
#     queue_rq is wrong even in direct mode.
#   * dd and fio libaio in aio mode: aio never makes a blocking call in
#     queue_rq; a write that would block (here: the frozen file system)
#     belongs to the kthread.
#   * dd and fio libaio in auto mode only where the backing takes NOWAIT
#     writes (direct I/O on, or xfs, whose buffered writes do NOWAIT): auto
#     then uses NOWAIT aio.  Over a backing without NOWAIT writes (ext4
#     buffered) auto may choose a synchronous inline call when the recent
#     queue depth is one, and that call legitimately waits for the thaw,
#     as in direct mode.  Shown as a diagnostic, not asserted.
#   * nothing for dd and libaio in direct mode (synchronous inline calls by
#     design: they are not started there).
# - every writer is still waiting when sampling ends (the freeze is
#   effective and the writes really were issued: otherwise "not blocked"
#   would prove nothing);
# - region B reads back intact while frozen, on every device: reads need
#   no freeze protection.  Region B is read once before the freeze so its
#   page cache (direct I/O off) or extent map (on) is warm: a cold read in
#   aio or auto mode may answer "would block" and be handed to the
#   kthread, which, like the stock driver's worker, processes its queue in
#   order and is then waiting for the thaw behind a write.  Not a defect
#   this test is about, and not asserted;
# - after the thaw every writer exits 0, dd's data reads back, both fio
#   writers verify (crc32c), and the device counts no errors.
# The debug (KASAN) kernel runs the three ext4 devices only.  With the
# stock driver (LMQ_DRIVER=loop), whose queue_rq never blocks, every
# writer is asserted on two devices (ext4 direct I/O on, xfs off); its
# reads while frozen wait behind the writes in its worker (measured), so
# for it that check is skipped and the reads are checked after the thaw.
DESCRIPTION="a frozen backing file system blocks writers, not the device; all resume"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	command -v fsfreeze >/dev/null || command -v xfs_io >/dev/null || skip_all "no fsfreeze or xfs_io"
}
. /tests/lib/guest.sh

debug=$LMQ_SLOW

M=/mnt/t74
mkdir -p $M
frozen=
freeze() { fsfreeze --freeze "$1" 2>/dev/null || xfs_io -x -c freeze "$1"; }
thaw() { fsfreeze --unfreeze "$1" 2>/dev/null || xfs_io -x -c thaw "$1"; }
thaw_all() {
	local m
	for m in $frozen; do thaw $m || return 1; done
	frozen=
}
trap thaw_all EXIT
modprobe -q dm-mod 2>/dev/null

# the device table: file system, mode and direct I/O of each device
if lmq_is_mq; then
	FSS=(ext4 ext4 ext4 xfs xfs xfs) MODES=(direct aio auto direct aio auto)
	DIOS=(on on on off off off)
else
	FSS=(ext4 xfs) MODES=(stock stock) DIOS=(on off)
fi
if [ $debug = 1 ]; then
	FSS=("${FSS[@]:0:$((${#FSS[@]} / 2))}")
	MODES=("${MODES[@]:0:${#FSS[@]}}") DIOS=("${DIOS[@]:0:${#FSS[@]}}")
fi
ND=${#MODES[@]}
lmq_load $ND || { fail "load $LMQ_MOD"; stop_testing; }
# the driver's queue_rq, whatever its devices are called (loopmq's in
# replace mode too, where they are loopN)
if lmq_is_mq; then QRQ="] loopmq_queue_rq+"; else QRQ="] loop_queue_rq+"; fi

# sample PID...: one line per thread of PID that is in an I/O system call:
# "PID KIND HIT" (KIND dd, libaio or uring; HIT 1 if in queue_rq).  One
# process per sample: TCG makes every fork expensive.
sample() {
	local p
	for p; do echo /proc/$p/task/*/stack; done | xargs grep -H '' 2>/dev/null | awk -v q="$QRQ" '
	function out() { if (k != "") { split(f, a, "/"); print a[3], k, h } }
	{ i = index($0, ":"); n = substr($0, 1, i - 1) }
	n != f { out(); f = n; k = ""; h = 0 }
	index($0, q) { h = 1 }
	/sys_io_submit|sys_io_getevents|sys_io_pgetevents/ { k = "libaio" }
	/sys_io_uring_enter/ { k = "uring" }
	/ksys_write|sys_pwrite/ { k = "dd" }
	END { out() }'
}
where() {	# where PID KIND: the stack of that writer's thread, one line
	local t re='sys_io_submit\|sys_io_getevents\|sys_io_pgetevents'
	case $2 in dd) re=ksys_write ;; uring) re=sys_io_uring_enter ;; esac
	for t in /proc/$1/task/*; do
		grep -q "$re" $t/stack 2>/dev/null || continue
		sed 's/^\[<[0-9a-f]*>\] //; s/+0x.*//' $t/stack | tr '\n' '<' | cut -c1-300
		break
	done
}
# asserted WRITER MODE DIO FS: must this writer not block in queue_rq?
asserted() {
	case $2 in
	stock|aio) return 0 ;;
	direct) [ "$1" = uring ] ;;
	auto) [ "$1" = uring ] || [ "$3" = on ] || [ "$4" = xfs ] ;;
	esac
}

head -c 8M /dev/urandom >/tmp/t74.img
head -c 1M /tmp/t74.img | sha256sum >/tmp/t74.b.sha
head -c 1M /dev/urandom >/tmp/t74.dd
fio_common="--thread --direct=1 --rw=randwrite --bs=4k --size=2M --iodepth=16
	--iodepth_batch_submit=16 --iodepth_batch_complete_min=1 --verify=crc32c
	--do_verify=1 --verify_fatal=1 --output-format=normal"

# both file systems, each on half of vda
half=$(($(blockdev --getsz /dev/vda) / 2))
for fs in $(printf '%s\n' "${FSS[@]}" | sort -u); do
	case $fs in ext4) off=0 ;; *) off=$half ;; esac
	mkdir -p $M/$fs
	dms create t74$fs --table "0 $half linear /dev/vda $off" || { fail "$fs: dm-linear"; stop_testing; }
	case $fs in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/t74$fs ;;
	xfs) mkfs.xfs -q -f /dev/mapper/t74$fs ;;
	esac >/dev/null 2>&1 && mount -t $fs /dev/mapper/t74$fs $M/$fs || { fail "$fs: mkfs and mount"; stop_testing; }
done
for ((i = 0; i < ND; i++)); do cp /tmp/t74.img $M/${FSS[i]}/img$i || fail "image $i"; done
sync
for ((i = 0; i < ND; i++)); do
	tag[i]="${FSS[i]}/${MODES[i]}/dio=${DIOS[i]}"
	$LOSETUP --direct-io=${DIOS[i]} $(lmq_dev $i) $M/${FSS[i]}/img$i || fail "${tag[i]}: attach"
	lmq_mode $i ${MODES[i]} || fail "${tag[i]}: set mode"
	lmq_is_mq && echo 0 >$(lmq_sys $i)/loopmq/stats
	# warm region B (see above)
	dd if=$(lmq_dev $i) of=/dev/null bs=64k count=16 iflag=direct status=none ||
		fail "${tag[i]}: read region B before the freeze"
done

for fs in $(printf '%s\n' "${FSS[@]}" | sort -u); do
	check "$fs: freeze" freeze $M/$fs && frozen+=" $M/$fs"
done
# the writers: W_KEY "PID/KIND", W_DEV device index
W_KEY=() W_DEV=() PIDS=()
for ((i = 0; i < ND; i++)); do
	D=$(lmq_dev $i) jobs=()
	if [ "${MODES[i]}" != direct ]; then
		dd if=/tmp/t74.dd of=$D bs=256k seek=24 oflag=direct status=none &
		W_KEY+=("$!/dd") W_DEV+=($i) PIDS+=($!)
		jobs=(--name=la --ioengine=libaio --offset=2M)
	fi
	fio $fio_common --filename=$D --output=/tmp/t74.fio$i "${jobs[@]}" \
		--name=ur --ioengine=io_uring --offset=4M >/dev/null 2>&1 &
	[ ${#jobs[@]} -gt 0 ] && W_KEY+=("$!/libaio") W_DEV+=($i)
	W_KEY+=("$!/uring") W_DEV+=($i) PIDS+=($!)
done
NW=${#W_KEY[@]}
# until every writer is in its I/O system call (or in queue_rq): then
# it has issued what it can before the thaw; then 10 samples
declare -A seen=() hits=()
for ((t = 0; t < 600; t++)); do
	while read -r p k h; do seen[$p/$k]=1; done < <(sample "${PIDS[@]}")
	ready=0
	for key in "${W_KEY[@]}"; do [ -n "${seen[$key]:-}" ] && ready=$((ready + 1)); done
	[ $ready -ge $NW ] && break
	sleep 0.1
done
diag "$ready of $NW writers in their I/O call after $t polls"
sleep 0.5
for ((s = 0; s < 10; s++)); do
	while read -r p k h; do hits[$p/$k]=$((${hits[$p/$k]:-0} + h)); done < <(sample "${PIDS[@]}")
	sleep 0.2
done
n=0
for ((i = 0; i < ND; i++)); do n=$((n + $(awk '{ print $2 }' $(lmq_sys $i)/inflight))); done
diag "$n writes in flight on $ND devices"
for ((w = 0; w < NW; w++)); do
	key=${W_KEY[w]} i=${W_DEV[w]}
	pid=${key%/*} name=${key#*/} h=${hits[$key]:-0}
	desc="${tag[i]}: $name writer, backing frozen"
	if [ -z "${seen[$key]:-}" ]; then
		fail "$desc: in its I/O system call while frozen" "never seen there: the freeze or the writer is broken"
		continue
	fi
	if ! alive $pid; then
		fail "$desc: still waiting while frozen" "it finished: the freeze or the writer is broken"
		continue
	fi
	if asserted $name ${MODES[i]} ${DIOS[i]} ${FSS[i]}; then
		if [ $h -lt 5 ]; then
			pass "$desc: not blocked in queue_rq ($h/10 samples)"
		else
			fail "$desc: not blocked in queue_rq" "in ${LMQ_NAME}_queue_rq in $h/10 samples: $(where $pid $name)"
		fi
	else
		diag "$desc: in queue_rq in $h/10 samples (not asserted: synchronous call by design)"
	fi
done
# region B of every device reads back while frozen
R_PID=()
for ((i = 0; i < ND; i++)); do
	dd if=$(lmq_dev $i) bs=64k count=16 iflag=direct status=none 2>/dev/null |
		sha256sum >/tmp/t74.r$i &
	R_PID[i]=$!
done
for ((t = 0; t < 200; t++)); do
	n=0
	for ((i = 0; i < ND; i++)); do alive ${R_PID[i]} && n=$((n + 1)); done
	[ $n -eq 0 ] && break
	sleep 0.1
done
late=()
for ((i = 0; i < ND; i++)); do
	if ! alive ${R_PID[i]}; then
		wait ${R_PID[i]}
		is "$(cat /tmp/t74.r$i)" "$(cat /tmp/t74.b.sha)" "${tag[i]}: region B reads back while frozen"
		continue
	fi
	late+=($i)
	if [ "${MODES[i]}" = stock ]; then
		skip "${tag[i]}: region B read while frozen" "the stock driver's worker serves it after the writes, at the thaw"
	else
		fail "${tag[i]}: region B read while frozen" "no answer in 20 s"
	fi
done

check "thaw" thaw_all
for i in ${late[@]+"${late[@]}"}; do
	for ((t = 0; t < 300; t++)); do alive ${R_PID[i]} || break; sleep 0.1; done
	if alive ${R_PID[i]}; then
		fail "${tag[i]}: region B reads back after the thaw" "no answer 30 s after the thaw"
	else
		wait ${R_PID[i]}
		is "$(cat /tmp/t74.r$i)" "$(cat /tmp/t74.b.sha)" "${tag[i]}: region B reads back after the thaw"
	fi
done
for p in "${PIDS[@]}"; do
	for ((t = 0; t < 900; t++)); do alive $p || break; sleep 0.1; done
	if alive $p; then
		fail "writer $p ($(tr '\0' ' ' </proc/$p/cmdline | cut -c1-60)) finishes after the thaw" "still running after 90 s"
		continue
	fi
	wait $p
	rc=$? key=
	for ((w = 0; w < NW; w++)); do [ "${W_KEY[w]%/*}" = $p ] && key=${W_KEY[w]} i=${W_DEV[w]}; done
	case $key in
	*/dd) is "$rc" 0 "${tag[i]}: dd writer finishes after the thaw" ;;
	*) is "$rc" 0 "${tag[i]}: fio writers finish and verify (crc32c) after the thaw" ||
		grep -i 'verify\|error' /tmp/t74.fio$i | head -n 5 | sed 's/^/#   /' ;;
	esac
done
for ((i = 0; i < ND; i++)); do
	[ "${MODES[i]}" = direct ] && continue
	is "$(dd if=$(lmq_dev $i) bs=256k skip=24 count=4 iflag=direct status=none | sha256sum)" \
		"$(sha256sum </tmp/t74.dd)" "${tag[i]}: dd's data reads back"
done
for ((i = 0; i < ND; i++)); do
	if lmq_is_mq; then
		diag "${tag[i]} stats: $(tr '\n' ' ' <$(lmq_sys $i)/loopmq/stats)"
		is "$(lmq_stat0 $i errors)" 0 "${tag[i]}: no errors counted"
	fi
	$LOSETUP -d $(lmq_dev $i) || fail "${tag[i]}: detach"
done
for fs in $(printf '%s\n' "${FSS[@]}" | sort -u); do
	umount $M/$fs && dms remove t74$fs || fail "$fs: umount"
done
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing
